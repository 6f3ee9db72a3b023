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

func (l pahoLogger) Println(v ...any) {
	l.log.Log(context.Background(), l.level, strings.TrimSpace(fmt.Sprintln(v...)))
}

func (l pahoLogger) Printf(format string, v ...any) {
	l.log.Log(context.Background(), l.level, strings.TrimSpace(fmt.Sprintf(format, v...)))
}
