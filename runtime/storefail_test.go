package runtime_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/drain"
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

// queueWelcome starts w's agent with sessions as its MLS sessions, lets
// it boot (nothing queued yet) and queues a Welcome from Alice while it
// sleeps.
func (w *world) queueWelcome(sessions drain.Sessions) {
	w.t.Helper()
	w.cfg.Sessions = sessions
	w.newAgent()
	w.run()
	w.nextWake()
	alice := runtimetest.Key(w.t, 1)
	if code := w.postBody(alice, runtimetest.Body(w.t, runtimetest.Welcome("g", alice.DID()))); code != http.StatusServiceUnavailable {
		w.t.Fatalf("send while asleep: %d, want 503 (queued)", code)
	}
}

// windowWake opens and closes the agent's first window after after, and
// returns the window's end and the report of the wake that drained in it.
func (w *world) windowWake(after time.Time) (time.Time, runtime.WakeReport) {
	w.t.Helper()
	start, end := w.window.Next(after)
	w.clock.Set(start)
	w.waitPhase(runtime.PhaseDrain)
	w.clock.Set(end)
	return end, w.nextWake()
}

// TestStoreFailureInTheDrainWaitsForTheNextWake: a batch that fails in the
// store is rolled back and acknowledged to nobody; the relay keeps the
// record, the wake reports the failure and drains no more, and the next
// wake, with the store working again, drains it.
func TestStoreFailureInTheDrainWaitsForTheNextWake(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	fail := new(atomic.Bool)
	fail.Store(true)
	w.queueWelcome(brokenStoreSessions{fail: fail})
	end, r := w.windowWake(t0)
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
	_, r = w.windowWake(end)
	if r.Drain.Acked != 1 || r.Drain.Handshake != 1 {
		t.Fatalf("next wake: drain %v, want the handshake applied and acknowledged", r.Drain)
	}
	if st, _ := w.queue.Stats(context.Background(), w.key.DID().String(), w.clock.Now()); st.Messages != 0 {
		t.Fatalf("relay still holds %d records", st.Messages)
	}
	w.shutdown()
}
