package broker

import (
	"context"
	"fmt"
	"log/slog"
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
// when it stops in its own lines. WARN and ERROR pass unchanged.
type quietHandler struct{ slog.Handler }

func (h quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, demote(l))
}

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return h.Handler.Handle(ctx, r)
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
