package runtime_test

import (
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/wake"
)

// countingSessions is runtimetest.Sessions counting the handshakes it
// applied.
type countingSessions struct {
	runtimetest.Sessions
	handshakes *atomic.Int32
}

func (s countingSessions) ApplyHandshake(tx *bolt.Tx, h a2a.Handshake, from did.DID) error {
	s.handshakes.Add(1)
	return s.Sessions.ApplyHandshake(tx, h, from)
}

// TestConfigSessionsReachThePipeline: the Sessions of Config (its
// PipelineConfig) are the ones the agent's drain opens MLS messages with.
func TestConfigSessionsReachThePipeline(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	n := new(atomic.Int32)
	w.queueWelcome(countingSessions{handshakes: n})
	if _, r := w.windowWake(t0); r.Drain.Handshake != 1 || n.Load() != 1 {
		t.Fatalf("drain %v, %d handshakes through Config.Sessions; want 1 applied by them", r.Drain, n.Load())
	}
	w.shutdown()
}
