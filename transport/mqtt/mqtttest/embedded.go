package mqtttest

import (
	"log/slog"
	"sync"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/broker"
)

// Embedded is the broker torpor-relay embeds, started by broker.Start
// exactly as the relay starts it (message expiry raised to 30 days,
// sessions and queued messages in a bbolt file), on a free loopback port.
type Embedded struct {
	dir  string
	addr string
	log  *slog.Logger

	mu sync.Mutex
	// mu guards all following fields.
	b         *broker.Broker
	operators []did.DID
	observers []did.DID
	audiences []string
}

// StartEmbedded starts the embedded broker with its data in t.TempDir()
// and stops it at the end of the test. log, when not nil, receives the
// broker's logs.
func StartEmbedded(t testing.TB, log *slog.Logger) *Embedded {
	t.Helper()
	e := &Embedded{dir: t.TempDir(), addr: "127.0.0.1:0", log: log}
	e.start(t)
	t.Cleanup(func() { e.Stop(t) })
	return e
}

func (e *Embedded) start(t testing.TB) {
	t.Helper()
	e.mu.Lock()
	cfg := broker.Config{Listen: e.addr, DataDir: e.dir, Logger: e.log,
		Operators: append([]did.DID(nil), e.operators...), Observers: append([]did.DID(nil), e.observers...), Audiences: append([]string(nil), e.audiences...)}
	e.mu.Unlock()
	b, err := broker.Start(cfg)
	if err != nil {
		t.Fatalf("starting the embedded broker: %v", err)
	}
	e.mu.Lock()
	e.b, e.addr = b, b.Addr()
	e.mu.Unlock()
}

// AddOperator lets d connect as an operator (broker.Broker.AddOperator),
// also after a Restart.
func (e *Embedded) AddOperator(d did.DID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.operators = append(e.operators, d)
	if e.b != nil {
		e.b.AddOperator(d)
	}
}

// AddObserver lets d read every device topic (broker.Broker.AddObserver),
// also after a Restart.
func (e *Embedded) AddObserver(d did.DID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.observers = append(e.observers, d)
	if e.b != nil {
		e.b.AddObserver(d)
	}
}

// AddAudience makes the broker accept tokens for url too (a Proxy's
// URL), also after a Restart.
func (e *Embedded) AddAudience(t testing.TB, url string) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.audiences = append(e.audiences, url)
	if e.b != nil {
		if err := e.b.AddAudience(url); err != nil {
			t.Fatal(err)
		}
	}
}

// URL implements Broker.
func (e *Embedded) URL() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return "mqtt://" + e.addr
}

// Stop implements Broker.
func (e *Embedded) Stop(t testing.TB) {
	t.Helper()
	e.mu.Lock()
	b := e.b
	e.b = nil
	e.mu.Unlock()
	if b != nil {
		if err := b.Close(); err != nil {
			t.Errorf("closing the embedded broker: %v", err)
		}
	}
}

// Restart implements Broker: the broker reopens its bbolt file on the same
// port.
func (e *Embedded) Restart(t testing.TB) {
	t.Helper()
	e.Stop(t)
	e.start(t)
}
