package jsstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/store/queue/queuetest"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// TestEnqueueReadsStateOnce counts the requests for the agent's queue
// state (JetStream's message get API on the state stream) that one
// Enqueue makes when no other write comes in between: one, for the
// bounds check, whose state the compare-and-swap then starts from.
func TestEnqueueReadsStateOnce(t *testing.T) {
	srv := single(t)
	c := open(t, srv)
	defer c.Close()
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("$JS.API.STREAM.MSG.GET." + jsstore.StateStream)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	q := c.Queue()
	for i := range 3 {
		r := queue.Record{Agent: "did:key:reads", From: queuetest.Alice, Body: []byte("x")}
		if _, err := q.Enqueue(context.Background(), r, queuebounds.Default(), queuetest.T0); err != nil {
			t.Fatal(err)
		}
		// The server sent the subscription every request it took before
		// this round trip.
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		n, _, err := sub.Pending()
		if err != nil || n != 1 {
			t.Errorf("enqueue %d read the state %d times (%v), want 1", i+1, n, err)
		}
		for range n {
			sub.NextMsg(time.Second)
		}
	}
}
