package jsstore

import (
	"context"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// TestConvertOldLayout: a queue of the previous layout (a state in
// TORPOR_QUEUE_STATE naming bodies on the agent's subject: seqs 5 and 7,
// and 6 whose body is gone, with 7 the last handed out) is converted when
// a relay opens the store: Next gives records 5 and 7 with their fields
// and bodies, the next enqueue gets seq 8, the old state is gone, and
// opening again changes nothing.
func TestConvertOldLayout(t *testing.T) {
	srv, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	defer jsserver.Shutdown([]*jsserver.Server{srv})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL()}
	c, err := Open(ctx, cfg) // the records stream
	if err != nil {
		t.Fatal(err)
	}
	const agent, alice = "did:key:zOld", "did:key:zAlice"
	t0 := time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)
	writeOldLayout(t, c, agent, alice, t0)
	c.Close()
	for range 2 {
		c, err := Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		q := c.Queue()
		rs, err := q.Next(ctx, agent, 0, 10, t0)
		if err != nil || len(rs) != 2 {
			t.Fatalf("Next after the conversion = %v, %v; want seqs 5 and 7", rs, err)
		}
		want := queue.Record{Seq: 7, Agent: agent, From: alice, Kind: queue.KindHandshake, EnqueuedAt: t0, ExpiresAt: t0.Add(time.Hour), Body: []byte("seven")}
		if got := rs[1]; rs[0].Seq != 5 || string(rs[0].Body) != "five" || got.Seq != want.Seq || got.From != want.From ||
			got.Kind != want.Kind || !got.EnqueuedAt.Equal(want.EnqueuedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) || string(got.Body) != "seven" {
			t.Errorf("converted records %+v, want 5 (five) and %+v", rs, want)
		}
		if s, err := c.js.Stream(ctx, c.n.state); err != nil || s.CachedInfo().State.Msgs != 0 {
			t.Errorf("old state stream after the conversion: %v; want it empty", err)
		}
		c.Close()
	}
	c, err = Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Queue().Enqueue(ctx, queue.Record{Agent: agent, From: alice, Body: []byte("new")}, queuebounds.Default(), t0)
	if err != nil || r.Seq != 8 {
		t.Errorf("enqueue after the conversion = seq %d, %v; want 8", r.Seq, err)
	}
}

// writeOldLayout stores agent's queue as the previous layout did.
func writeOldLayout(t *testing.T, c *Conn, agent, alice string, t0 time.Time) {
	ctx := context.Background()
	_, err := c.js.CreateStream(ctx, jetstream.StreamConfig{Name: c.n.state, Subjects: []string{c.n.stateSubj + ">"},
		Storage: jetstream.FileStorage, MaxMsgsPerSubject: 1})
	if err != nil {
		t.Fatal(err)
	}
	body := func(b string) uint64 {
		m := &nats.Msg{Subject: c.n.recordsSubj + token(agent), Data: []byte(b), Header: nats.Header{"Torpor-Agent": {agent}}}
		ack, err := c.js.PublishMsg(ctx, m, jetstream.WithMsgTTL(2*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	five, gone, seven := body("five"), body("six"), body("seven")
	if err := c.records.DeleteMsg(ctx, gone); err != nil {
		t.Fatal(err)
	}
	exp := t0.Add(time.Hour).UnixNano()
	w := wireState{Agent: agent, Last: 7, Peers: []string{alice}, Live: [][7]int64{
		{5, int64(five), 4, int64(queue.KindMessage), -1, t0.UnixNano(), exp},
		{6, int64(gone), 3, int64(queue.KindMessage), 0, t0.UnixNano(), exp},
		{7, int64(seven), 5, int64(queue.KindHandshake), 0, t0.UnixNano(), exp}}}
	b, err := cbor.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.js.Publish(ctx, c.n.stateSubj+token(agent), append([]byte{stateVersion}, b...)); err != nil {
		t.Fatal(err)
	}
}

// TestViewReadAgainWhenLastRemoved: when the last message of an agent's
// subject is removed from under a relay's view (here an operator purges
// the subject), the refused publish reads the view again whole instead
// of failing, and the enqueue goes through.
func TestViewReadAgainWhenLastRemoved(t *testing.T) {
	srv, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true})
	if err != nil {
		t.Fatal(err)
	}
	defer jsserver.Shutdown([]*jsserver.Server{srv})
	ctx := context.Background()
	c, err := Open(ctx, Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q, b := c.Queue(), queuebounds.Default()
	r := queue.Record{Agent: "did:key:zPurged", From: "did:key:zAlice", Body: []byte("x")}
	for range 2 {
		if _, err := q.Enqueue(ctx, r, b, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.records.Purge(ctx, jetstream.WithPurgeSubject(q.subject(r.Agent))); err != nil {
		t.Fatal(err)
	}
	got, err := q.Enqueue(ctx, r, b, time.Now())
	if err != nil || got.Seq != 1 {
		t.Errorf("enqueue after the subject was purged = seq %d, %v; want 1 (the purge took every record)", got.Seq, err)
	}
}
