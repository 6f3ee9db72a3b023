package mqtt

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestPahoLoggerClosedConnection: paho's error about writing to a closed
// connection (the demo's last line: "failed to send PUBACK for 1: write
// tcp …: use of closed network connection", logged as the agent went to
// sleep) is a debug line, not a warning; other paho errors stay warnings.
func TestPahoLoggerClosedConnection(t *testing.T) {
	var buf bytes.Buffer
	l := pahoLogger{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), slog.LevelWarn}
	l.Printf("failed to send PUBACK for %d: %s", 1, "write tcp 127.0.0.1:50890->127.0.0.1:38629: use of closed network connection")
	l.Println("session: packet identifier 7 unknown")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "level=DEBUG") || !strings.Contains(lines[1], "level=WARN") {
		t.Errorf("logged:\n%s\nwant the closed connection at DEBUG and the other error at WARN", buf.String())
	}
}
