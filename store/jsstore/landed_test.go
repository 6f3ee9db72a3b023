package jsstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// TestRetryOfATakenRecordIsNotStoredAgain plays what test/cluster's
// history checker caught (seed 1796516609877113172): an Enqueue's first
// write landed but its answer was lost, the device took the record and
// acknowledged it (its message deleted, a marker naming its seq), and
// only then did the Enqueue try again. Its view, brought up to date,
// no longer holds the record to recognise, and a write at the next seq
// stored the body a second time, which the device then got twice. The
// write's message id (the Enqueue call's op) makes JetStream answer the
// retry as a duplicate instead.
func TestRetryOfATakenRecordIsNotStoredAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	relay, device := twoQueues(t, ctx)
	const agent = "did:key:z6MkAgent"
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	b := queuebounds.Default()
	rec := func(body string) queue.Record {
		return queue.Record{Agent: agent, From: "did:key:z6MkSender", Body: []byte(body)}
	}
	if _, err := relay.Enqueue(ctx, rec("first"), b, now); err != nil {
		t.Fatal(err)
	}

	// The next Enqueue's first write, landed unanswered: the relay's view
	// does not hold it.
	op := relay.opPrefix + strconv.FormatUint(relay.ops.Load()+1, 36)
	lost, err := queue.Prepare(rec("lost answer"), b, now)
	if err != nil {
		t.Fatal(err)
	}
	lost.Seq = 2
	av := relay.lock(relay.subject(agent))
	_, err = relay.publish(ctx, recordMsg(relay.subject(agent), lost, op), av.v.Last)
	av.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	// The device takes both records.
	got, err := device.Next(ctx, agent, 0, 10, now)
	if err != nil || len(got) != 2 {
		t.Fatalf("the device's pull: %d records, %v; want 2", len(got), err)
	}
	if err := device.Ack(ctx, agent, []uint64{1, 2}); err != nil {
		t.Fatal(err)
	}

	// The Enqueue goes on: its retry must not store the body again.
	if _, err := relay.Enqueue(ctx, rec("lost answer"), b, now); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	again, err := device.Next(ctx, agent, 0, 10, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range again {
		t.Errorf("the device gets seq %d %q again, after it took it", r.Seq, r.Body)
	}
}

// twoQueues starts a single server that fsyncs every write and returns
// two connections' queues on it.
func twoQueues(t *testing.T, ctx context.Context) (*Queue, *Queue) {
	srv, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{srv}) })
	var qs [2]*Queue
	for i := range qs {
		c, err := Open(ctx, Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		qs[i] = c.Queue()
	}
	return qs[0], qs[1]
}
