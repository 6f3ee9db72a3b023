package conformance

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/store/queue"
)

// Options configure RunWith.
type Options struct {
	// Store is where the relay-side kinds (queue, dequeue, http,
	// reachability, card) keep the relay's queue and agent states: "bolt"
	// (the default, files under the run's temporary directory) or
	// "jetstream": a single-node NATS JetStream server that the run starts
	// in this process (loopback, file storage in a temporary directory,
	// fsync on every write) and stops at the end, each store path under
	// its own stream prefix (store/jsstore).
	Store string
}

// backend opens the relay's stores for the paths the kinds name; a path
// opened again is the same data.
type backend interface {
	queue(path string) (queue.Store, error)
	agents(path string) (agents.Store, error)
	close()
}

var (
	runMu   sync.Mutex // one run at a time: current is the run's backend
	current backend    = boltBackend{}
	// jsOpened counts the JetStream stores opened, for the tests.
	jsOpened atomic.Int64
)

// Run runs the vectors under dir against the bbolt stores; see RunWith.
func Run(dir string) (*Report, error) { return RunWith(dir, Options{}) }

// RunWith runs every vector under dir (see run) with the stores o names.
func RunWith(dir string, o Options) (*Report, error) {
	b, err := newBackend(o.Store)
	if err != nil {
		return nil, err
	}
	defer b.close()
	runMu.Lock()
	defer runMu.Unlock()
	current = b
	defer func() { current = boltBackend{} }()
	return run(dir)
}

func newBackend(store string) (backend, error) {
	switch store {
	case "", "bolt":
		return boltBackend{}, nil
	case "jetstream":
		return startJetStream()
	}
	return nil, fmt.Errorf("conformance: store %q: want bolt or jetstream", store)
}

func openQueue(path string) (queue.Store, error)   { return current.queue(path) }
func openAgents(path string) (agents.Store, error) { return current.agents(path) }

type boltBackend struct{}

func (boltBackend) queue(path string) (queue.Store, error) { return queue.OpenBolt(path, nil) }
func (boltBackend) agents(path string) (agents.Store, error) {
	return agents.OpenBolt(path, nil)
}
func (boltBackend) close() {}

// jsBackend maps each store path to a stream prefix on one server.
type jsBackend struct {
	dir string
	srv *jsserver.Server

	mu       sync.Mutex
	prefixes map[string]string
}

func startJetStream() (*jsBackend, error) {
	dir, err := os.MkdirTemp("", "torpor-conformance-nats-")
	if err != nil {
		return nil, err
	}
	srv, err := jsserver.Start(dir, jsserver.Options{SyncAlways: true})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("conformance: starting NATS JetStream: %w", err)
	}
	return &jsBackend{dir: dir, srv: srv, prefixes: map[string]string{}}, nil
}

func (b *jsBackend) close() {
	jsserver.Shutdown([]*jsserver.Server{b.srv})
	os.RemoveAll(b.dir)
}

func (b *jsBackend) open(path string) (*jsstore.Conn, error) {
	jsOpened.Add(1)
	b.mu.Lock()
	p, ok := b.prefixes[path]
	if !ok {
		p = fmt.Sprintf("V%d", len(b.prefixes)+1)
		b.prefixes[path] = p
	}
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return jsstore.Open(ctx, jsstore.Config{URLs: []string{b.srv.URL()}, Replicas: 1, MonitorURL: b.srv.MonitorURL(), Prefix: p, Name: "torpor-conformance"})
}

func (b *jsBackend) queue(path string) (queue.Store, error) {
	c, err := b.open(path)
	if err != nil {
		return nil, err
	}
	return c.OwnQueue(), nil
}

func (b *jsBackend) agents(path string) (agents.Store, error) {
	c, err := b.open(path)
	if err != nil {
		return nil, err
	}
	return c.OwnAgents(), nil
}
