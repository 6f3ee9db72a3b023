package relay

import (
	"context"
	"errors"
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
	// relay's other 503 answers (issue 29: it was plain JSON).
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
