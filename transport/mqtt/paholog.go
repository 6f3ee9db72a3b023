package mqtt

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// pahoLogger adapts a slog.Logger at one level to paho's Logger, so that
// paho's errors (and, at debug level, its trace) reach the daemon's log.
type pahoLogger struct {
	log   *slog.Logger
	level slog.Level
}

func (l pahoLogger) Println(v ...any) { l.emit(strings.TrimSpace(fmt.Sprintln(v...))) }

func (l pahoLogger) Printf(format string, v ...any) {
	l.emit(strings.TrimSpace(fmt.Sprintf(format, v...)))
}

// closedConn is what paho reports when it writes (a PUBACK, a PINGREQ) to
// a connection the client or the broker already closed: at a wake's end,
// or a broker restart. Nothing is lost by it (the session, and the
// device's inbox, make up for it), so it is no warning for an operator.
const closedConn = "use of closed network connection"

func (l pahoLogger) emit(msg string) {
	lvl := l.level
	if lvl > slog.LevelDebug && strings.Contains(msg, closedConn) {
		lvl = slog.LevelDebug
	}
	l.log.Log(context.Background(), lvl, msg)
}
