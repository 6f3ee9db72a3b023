package broker

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
)

// TestFreshStoreLogsNoError: a broker on a new data directory logs no
// ERROR (mochi's bbolt hook read a $SYS record that was not there), on a
// second start neither, and mochi's INFO lines come at DEBUG: started and
// stopped, it logs nothing at INFO or above.
func TestFreshStoreLogsNoError(t *testing.T) {
	dir := t.TempDir()
	for i := range 2 {
		rec := &recorder{}
		b, err := Start(Config{Listen: "127.0.0.1:0", DataDir: dir, Logger: slog.New(rec)})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		for _, r := range rec.records {
			if r.Level >= slog.LevelInfo {
				t.Errorf("start %d: %s %q", i+1, r.Level, r.Message)
			}
		}
		if len(rec.records) == 0 {
			t.Errorf("start %d: mochi logged nothing at DEBUG either", i+1)
		}
		rec.mu.Unlock()
	}
}

// recorder is a slog.Handler that keeps every record.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec)
	return nil
}

func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// TestClosedConnectionIsNoWarning: mochi's warning about reading from a
// connection already closed (the cluster demo's last WARN: "error=read
// tcp …: use of closed network connection" as a relay stopped) comes at
// DEBUG, and is dropped by a handler at INFO; another warning stays one.
func TestClosedConnectionIsNoWarning(t *testing.T) {
	rec := &recorder{}
	log := slog.New(quietHandler{rec})
	closed := &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}
	log.Warn("", "error", closed)
	log.Warn("", "error", errors.New("packet too large"))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.records) != 2 || rec.records[0].Level != slog.LevelDebug || rec.records[1].Level != slog.LevelWarn {
		t.Errorf("records %+v; want the closed connection at DEBUG and the other at WARN", rec.records)
	}
	var buf strings.Builder
	slog.New(quietHandler{slog.NewTextHandler(&buf, nil)}).Warn("", "error", closed)
	if buf.Len() != 0 {
		t.Errorf("a handler at INFO printed %q", buf.String())
	}
}
