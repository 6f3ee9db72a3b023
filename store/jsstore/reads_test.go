package jsstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/store/queue/queuetest"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// sent is how many messages c has sent to the server: its publishes and
// its JetStream API requests (nats.Conn.Stats).
func sent(c *jsstore.Conn) uint64 { return c.NATS().Stats().OutMsgs }

// enqueueCost enqueues one record for agent through q and returns how
// many messages c sent for it.
func enqueueCost(t *testing.T, c *jsstore.Conn, q *jsstore.Queue, agent string) uint64 {
	t.Helper()
	before := sent(c)
	r := queue.Record{Agent: agent, From: fmt.Sprint("did:key:sender", before), Body: []byte("x")}
	if _, err := q.Enqueue(context.Background(), r, queuebounds.Default(), queuetest.T0); err != nil {
		t.Fatal(err)
	}
	return sent(c) - before
}

// TestEnqueueOneRequest counts the messages a relay's connection sends
// per Enqueue: the first for an agent reads its queue (one message get,
// which finds nothing) and publishes; every later one, while no other
// relay writes to the agent, is the one publish. When another connection
// wrote in between, the stale view costs the refused publish, the read
// of the new message and of none after it, and the publish again.
func TestEnqueueOneRequest(t *testing.T) {
	srv := single(t)
	c, other := open(t, srv), open(t, srv)
	defer c.Close()
	defer other.Close()
	q, oq := c.Queue(), other.Queue()
	const agent = "did:key:reads"
	if n := enqueueCost(t, c, q, agent); n != 2 {
		t.Errorf("first enqueue sent %d messages, want 2 (one read, one publish)", n)
	}
	for i := range 50 {
		if n := enqueueCost(t, c, q, agent); n != 1 {
			t.Fatalf("enqueue %d sent %d messages, want 1", i+2, n)
		}
	}
	enqueueCost(t, other, oq, agent)
	if n := enqueueCost(t, c, q, agent); n != 4 {
		t.Errorf("enqueue after another connection's sent %d messages, want 4", n)
	}
	if n := enqueueCost(t, c, q, agent); n != 1 {
		t.Errorf("the next enqueue sent %d messages, want 1", n)
	}
	rs, err := q.Next(context.Background(), agent, 0, 100, queuetest.T0)
	if err != nil || len(rs) != 54 || rs[53].Seq != 54 {
		t.Errorf("Next = %d records (%v), want seqs 1–54", len(rs), err)
	}
}
