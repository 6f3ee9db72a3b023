package runtime_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/wake"
)

// brokenStoreSessions is runtimetest.Sessions whose handshakes fail in the
// store while fail is set: a Put bbolt refuses, after half a change.
type brokenStoreSessions struct {
	runtimetest.Sessions
	fail *atomic.Bool
}

func (s brokenStoreSessions) ApplyHandshake(tx *bolt.Tx, h a2a.Handshake, from did.DID) error {
	if s.fail.Load() {
		b, err := tx.CreateBucketIfNotExists([]byte("half"))
		if err != nil {
			return err
		}
		if err := b.Put(make([]byte, bolt.MaxKeySize+1), nil); err != nil {
			return fmt.Errorf("saving the group: %w", err)
		}
	}
	return s.Sessions.ApplyHandshake(tx, h, from)
}

// postBody posts a JSON-RPC body to the agent through the relay as
// sender, and returns the HTTP status.
func (w *world) postBody(sender *did.PrivateKey, body []byte) int {
	w.t.Helper()
	code, _ := worldtest.Post(w.t, w.srv.URL, w.key.DID(), sender, w.clock.Now(), body)
	return code
}

// TestStoreFailureInTheDrainWaitsForTheNextWake: a batch that fails in the
// store is rolled back and acknowledged to nobody; the relay keeps the
// record, the wake reports the failure and drains no more, and the next
// wake, with the store working again, drains it.
func TestStoreFailureInTheDrainWaitsForTheNextWake(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	fail := new(atomic.Bool)
	fail.Store(true)
	w.cfg.Sessions = brokenStoreSessions{fail: fail}
	w.newAgent()
	w.run()
	w.nextWake() // boot: nothing queued yet
	alice := runtimetest.Key(t, 1)
	if code := w.postBody(alice, runtimetest.Body(t, runtimetest.Welcome("g", alice.DID()))); code != http.StatusServiceUnavailable {
		t.Fatalf("send while asleep: %d, want 503 (queued)", code)
	}
	start, end := w.window.Next(t0)
	w.clock.Set(start)
	w.waitPhase(runtime.PhaseDrain)
	w.clock.Set(end)
	r := w.nextWake()
	var drainErr string
	for _, p := range r.Phases {
		if p.Name == runtime.PhaseDrain {
			drainErr += p.Err
		}
	}
	if r.Drain.Acked != 0 || r.Drain.RejectedTotal() != 0 || !strings.Contains(drainErr, "store failure") {
		t.Fatalf("wake with a failing store: drain %v, drain phase error %q; want nothing acknowledged or rejected, the store failure reported", r.Drain, drainErr)
	}
	if st, _ := w.queue.Stats(context.Background(), w.key.DID().String(), w.clock.Now()); st.Messages != 1 {
		t.Fatalf("relay holds %d records after the failed batch, want 1", st.Messages)
	}

	fail.Store(false)
	start, end = w.window.Next(end)
	w.clock.Set(start)
	w.waitPhase(runtime.PhaseDrain)
	w.clock.Set(end)
	r = w.nextWake()
	if r.Drain.Acked != 1 || r.Drain.Handshake != 1 {
		t.Fatalf("next wake: drain %v, want the handshake applied and acknowledged", r.Drain)
	}
	if st, _ := w.queue.Stats(context.Background(), w.key.DID().String(), w.clock.Now()); st.Messages != 0 {
		t.Fatalf("relay still holds %d records", st.Messages)
	}
	w.shutdown()
}
