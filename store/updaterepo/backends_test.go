package updaterepo_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/store/updaterepo"
)

// opener opens the repository of one test with cfg's keys, bound and
// clock; every call after the first is the same repository again: the
// same bbolt file, or a new connection to the same NATS server (another
// relay of the cluster).
type opener func(t testing.TB, cfg updaterepo.Config) *updaterepo.Repo

// eachBackend runs f once on a real bbolt file and once on a real
// nats-server (store/jsstore's Updates), as subtests: the contract both
// repositories keep.
func eachBackend(t *testing.T, f func(t *testing.T, open opener)) {
	t.Run("bolt", func(t *testing.T) { f(t, boltOpener(t)) })
	t.Run("jetstream", func(t *testing.T) { f(t, jetstreamOpener(t)) })
}

func boltOpener(t testing.TB) opener {
	path := filepath.Join(t.TempDir(), "updates.db")
	return func(t testing.TB, cfg updaterepo.Config) *updaterepo.Repo {
		cfg.Path = path
		r, err := updaterepo.Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// jetstreamOpener starts a nats-server (one replica, fsync on every
// write) for the test; each opening is a new connection to it.
func jetstreamOpener(t testing.TB) opener {
	var once sync.Once
	var srv *jsserver.Server
	return func(t testing.TB, cfg updaterepo.Config) *updaterepo.Repo {
		once.Do(func() {
			s, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{s}) })
			srv = s
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := jsstore.Open(ctx, jsstore.Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL()})
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.Updates(ctx, cfg.MaxBytes)
		if err != nil {
			c.Close()
			t.Fatal(err)
		}
		r, err := updaterepo.New(cfg, closing{b, c})
		if err != nil {
			c.Close()
			t.Fatal(err)
		}
		return r
	}
}

// closing is a backend whose Close closes its connection too.
type closing struct {
	*jsstore.Updates
	c *jsstore.Conn
}

func (c closing) Close() error { return c.c.Close() }
