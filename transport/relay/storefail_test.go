package relay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// failingQueue is a queue whose Enqueue fails as a JetStream stream
// without quorum does.
type failingQueue struct{ queue.Store }

func (failingQueue) Enqueue(context.Context, queue.Record, queuebounds.Bounds, time.Time) (queue.Record, error) {
	return queue.Record{}, errors.New("nats: timeout")
}

// TestStoreFailureAnswers503NotQueued: when the store cannot take a
// record, the sender gets 503 with queued false, a message saying nothing
// was queued and a Retry-After, which it may retry; not a 500.
func TestStoreFailureAnswers503NotQueued(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Stores.Queue = failingQueue{c.Stores.Queue} })
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	h.publishOffline(t, dev, "sleep", deviceOpts{})
	// A body the device would never take is refused before the store
	// (200, a JSON-RPC error: TestRefusesWhatTheAgentNeverTakes); these
	// reach it.
	// A JSON-RPC call gets the answer in the JSON-RPC envelope, as the
	// relay's other 503 answers (it was plain JSON).
	for _, body := range []string{sendV1, strings.Replace(sendV1, `"m1"`, `"m2"`, 1)} {
		r := h.post(t, dev.DID(), alice, "1.0", body)
		msg := `"the relay could not read or write its store; nothing was queued or changed, try again later"`
		want := `{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":` + msg + `,"data":{"error":"store_unavailable","queued":false,"retryAfterSec":5}},"message":` + msg + `,"queued":false,"retryAfterSec":5}`
		if r.status != 503 || string(r.body) != want || r.header.Get("Retry-After") != "5" {
			t.Errorf("%s: %d Retry-After %q %s\nwant 503 Retry-After 5 %s", body, r.status, r.header.Get("Retry-After"), r.body, want)
		}
	}
	if n := len(h.queued(t, dev.DID())); n != 0 {
		t.Errorf("%d records queued, want none", n)
	}
}

// unconfirmedQueue stores the record and then reports that the store did
// not confirm it, as a JetStream publish whose answer was lost.
type unconfirmedQueue struct{ queue.Store }

func (q unconfirmedQueue) Enqueue(ctx context.Context, r queue.Record, b queuebounds.Bounds, now time.Time) (queue.Record, error) {
	if _, err := q.Store.Enqueue(ctx, r, b, now); err != nil {
		return queue.Record{}, err
	}
	return queue.Record{}, fmt.Errorf("jsstore: %w: context deadline exceeded", queue.ErrUnconfirmed)
}

// TestUnconfirmedEnqueueSaysItMayBeQueued: a record the store took but did
// not confirm may be delivered, so the answer must not say nothing was
// queued (the cluster's history check showed such a record
// delivered): 503 store_unconfirmed, queued false as the profile wants
// for anything not confirmed, and a message saying it may be queued.
func TestUnconfirmedEnqueueSaysItMayBeQueued(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Stores.Queue = unconfirmedQueue{c.Stores.Queue} })
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	h.publishOffline(t, dev, "sleep", deviceOpts{})
	r := h.post(t, dev.DID(), alice, "1.0", sendV1)
	msg := `"the relay's store did not confirm the write in time; the message may or may not be queued, and may be delivered; ` +
		`the device drops a second copy of an object it has seen, so sending it again is safe"`
	want := `{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":` + msg + `,"data":{"error":"store_unconfirmed","queued":false,"retryAfterSec":5}},"message":` + msg + `,"queued":false,"retryAfterSec":5}`
	if r.status != 503 || string(r.body) != want || r.header.Get("Retry-After") != "5" {
		t.Errorf("%d Retry-After %q %s\nwant 503 Retry-After 5 %s", r.status, r.header.Get("Retry-After"), r.body, want)
	}
	if n := len(h.queued(t, dev.DID())); n != 1 {
		t.Errorf("%d records queued, want the one not confirmed", n)
	}
}
