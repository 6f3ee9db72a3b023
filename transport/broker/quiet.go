package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/mochi-mqtt/server/v2/hooks/storage"
	"go.etcd.io/bbolt"
)

// boltBucket is the bucket of mochi's bbolt hook (its default, named so
// that seedSysInfo writes where the hook reads).
const boltBucket = "mochi"

// seedSysInfo stores an empty $SYS record in a new mqtt.db at path, so
// that mochi's bbolt hook, which reads it at start, does not log a "key
// not found" ERROR for a fresh store. A store that has one is left alone.
func seedSysInfo(path string) error {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(boltBucket))
		if err != nil || b.Get([]byte(storage.SysInfoKey)) != nil {
			return err
		}
		v, err := (&storage.SystemInfo{ID: storage.SysInfoKey, T: storage.SysInfoKey}).MarshalBinary()
		if err != nil {
			return err
		}
		return b.Put([]byte(storage.SysInfoKey), v)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("broker: %s: %w", path, err)
	}
	return nil
}

// quietHandler records mochi's INFO lines (hooks added, listener attached,
// server started and stopped) at DEBUG: the relay says what it runs and
// when it stops in its own lines, and its warning about a connection
// already closed at DEBUG too. Other WARN and ERROR lines pass unchanged.
type quietHandler struct{ slog.Handler }

func (h quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, demote(l))
}

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	if r.Level == slog.LevelWarn && closedConn(r) {
		// mochi warns when it reads from a client connection that a
		// close, its own or the client's, already ended (at a relay's
		// stop): nothing is lost by it, so it is no warning.
		r.Level = slog.LevelDebug
		if !h.Handler.Enabled(ctx, r.Level) {
			return nil
		}
	}
	return h.Handler.Handle(ctx, r)
}

// closedConn reports whether r's error is a read or write on a closed
// network connection (net.ErrClosed).
func closedConn(r slog.Record) bool {
	closed := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && errors.Is(err, net.ErrClosed) {
			closed = true
		}
		return !closed
	})
	return closed
}

func (h quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return quietHandler{h.Handler.WithAttrs(as)}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{h.Handler.WithGroup(name)}
}

func demote(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}
