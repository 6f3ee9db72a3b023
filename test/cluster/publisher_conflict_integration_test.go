//go:build integration

package cluster

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
)

// TestPublishExpectingCatchesUp: the benchmark publishers' publish with
// an expected last subject sequence that the stream refuses (here a stale
// one, as an R3 leader's refusal of a subject still in process looks to
// the publisher) reads the subject's last sequence and lands, once; a
// publish whose stream does not exist still fails.
func TestPublishExpectingCatchesUp(t *testing.T) {
	s, err := jsserver.Start(t.TempDir(), jsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	js, err := connectJetStream(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH_C", Subjects: []string{"bench.c.>"}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := publishExpecting(js, &nats.Msg{Subject: "bench.c.1", Data: []byte("a")}, "BENCH_C", 0)
	if err != nil {
		t.Fatal(err)
	}
	// 0 is stale now: the subject's last sequence is first.Sequence.
	m := &nats.Msg{Subject: "bench.c.1", Data: []byte("b"), Header: nats.Header{jetstream.MsgIDHeader: {"b"}}}
	ack, err := publishExpecting(js, m, "BENCH_C", 0)
	if err != nil {
		t.Fatalf("a publish on a stale expectation: %v, want it to catch up and land", err)
	}
	if ack.Sequence != first.Sequence+1 || ack.Duplicate {
		t.Errorf("landed at %d (duplicate %v), want %d", ack.Sequence, ack.Duplicate, first.Sequence+1)
	}
	if info, err := st.Info(ctx); err != nil || info.State.Msgs != 2 {
		t.Errorf("stream holds %v messages (%v), want 2", info.State.Msgs, err)
	}
	if _, err := publishExpecting(js, &nats.Msg{Subject: "bench.c.2"}, "BENCH_NONE", 0); err == nil {
		t.Error("a publish to a stream that does not exist succeeded")
	}
}
