package updaterepo_test

import (
	"context"
	"fmt"
	"os"
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
		return openOn(t, jsstore.Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL()}, cfg)
	}
}

// closing is a backend whose Close closes its connection too.
type closing struct {
	*jsstore.Updates
	c *jsstore.Conn
}

func (c closing) Close() error { return c.c.Close() }

// cluster is a 3-server JetStream cluster the package's tests share, each
// test under its own prefix; TestMain stops it.
var cluster struct {
	once sync.Once
	dir  string
	ss   []*jsserver.Server
	err  error
	mu   sync.Mutex
	n    int
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cluster.ss != nil {
		jsserver.Shutdown(cluster.ss)
	}
	if cluster.dir != "" {
		os.RemoveAll(cluster.dir)
	}
	os.Exit(code)
}

// clusterOpener opens the repository with 3 replicas on the shared
// cluster, each opening connected to the next server of the three (as the
// relays of a fleet spread over them).
func clusterOpener(t testing.TB) opener {
	cluster.once.Do(func() {
		if cluster.dir, cluster.err = os.MkdirTemp("", "updaterepo-cluster"); cluster.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cluster.ss, cluster.err = jsserver.StartCluster(ctx, cluster.dir, 3, jsserver.Options{})
	})
	if cluster.err != nil {
		t.Fatal(cluster.err)
	}
	cluster.mu.Lock()
	cluster.n++
	prefix := fmt.Sprintf("U%d", cluster.n)
	cluster.mu.Unlock()
	opens := 0
	return func(t testing.TB, cfg updaterepo.Config) *updaterepo.Repo {
		opens++
		return openOn(t, jsstore.Config{URLs: []string{cluster.ss[opens%3].URL()}, Prefix: prefix}, cfg)
	}
}

// openOn opens the repository through a new connection with jc.
func openOn(t testing.TB, jc jsstore.Config, cfg updaterepo.Config) *updaterepo.Repo {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := jsstore.Open(ctx, jc)
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

// eachJetStream runs f on one server and on the 3-server cluster.
func eachJetStream(t *testing.T, f func(t *testing.T, open opener)) {
	t.Run("single", func(t *testing.T) { f(t, jetstreamOpener(t)) })
	t.Run("cluster", func(t *testing.T) { f(t, clusterOpener(t)) })
}
