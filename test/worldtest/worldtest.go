// Package worldtest starts test worlds in one process. Open and Start
// give the relay side: a torpor-relay on loopback with its queue and agent
// states in real bbolt files, for tests that run an agent, torporctl or a
// script against it; the caller brings the clock (usually a
// clocktest.Clock) and everything else in relay.Config. NewDevice gives
// the whole MQTT device world on one fake clock: that relay, a broker, a
// real agent with operator commands and an operator (Device); RunPublished
// runs an agent until it has published its state. NewSession gives a
// device's MQTT side alone: its session (runtime/manage) and an operator.
//
// It sits under test/ with the other harnesses, but not in test/internal:
// the tests of runtime and of the commands (package main) import it too,
// and an internal package there is importable only from test/... . It is
// for tests only; no package of the module's binaries imports it.
package worldtest

import (
	"errors"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/torpor-dev/torpor/session/kpcheck"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/relay"
)

// Relay is a relay serving on loopback.
type Relay struct {
	*relay.Relay
	// URL is the relay's origin (http://127.0.0.1:port), also its
	// PublicURL.
	URL    string
	Queue  *queue.Bolt
	States *agents.Bolt
	Server *httptest.Server
}

// Open starts a relay with its files queue.db and agents.db in dir. cfg's
// PublicURL, Queue and States are set here, KeyPackages when nil (to the
// relay binary's verifier, session/kpcheck), and AdmitAll unless cfg sets
// a Probation or AllowAgents (the world's devices are not on probation);
// the rest is the caller's.
// Close stops it.
func Open(dir string, cfg relay.Config) (*Relay, error) {
	q, err := queue.OpenBolt(filepath.Join(dir, "queue.db"), nil)
	if err != nil {
		return nil, err
	}
	states, err := agents.OpenBolt(filepath.Join(dir, "agents.db"), nil)
	if err != nil {
		q.Close()
		return nil, err
	}
	srv := httptest.NewUnstartedServer(nil)
	cfg.PublicURL, cfg.Stores.Queue, cfg.Stores.States = "http://"+srv.Listener.Addr().String(), q, states
	if cfg.KeyPackages == nil {
		cfg.KeyPackages = kpcheck.Verifier{}
	}
	if cfg.Access.Probation == (relay.Probation{}) && len(cfg.Access.AllowAgents) == 0 {
		cfg.Access.AdmitAll = true
	}
	r, err := relay.New(cfg)
	if err != nil {
		srv.Close()
		return nil, errors.Join(err, q.Close(), states.Close())
	}
	srv.Config.Handler = r.Handler()
	srv.Start()
	return &Relay{Relay: r, URL: srv.URL, Queue: q, States: states, Server: srv}, nil
}

// Start is Open in a temporary directory of t's; the relay stops when the
// test ends.
func Start(t testing.TB, cfg relay.Config) *Relay {
	t.Helper()
	r, err := Open(t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// Close ends the device links, stops the server and closes the files.
func (r *Relay) Close() {
	r.Link().Close()
	r.Server.Close()
	r.Queue.Close()
	r.States.Close()
}
