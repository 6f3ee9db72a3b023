package runtime_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/wake"
)

// TestRefusedRecordsLeaveTheQueue: records the device judged and refused
// (not JSON, a duplicate "method", nested too deep, not a message
// submission), queued by a relay that did not refuse them at enqueue, are
// acknowledged at the first wake, reported by cause, and gone from the
// relay: the next wake drains nothing.
func TestRefusedRecordsLeaveTheQueue(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	w.run()
	w.nextWake() // boot: nothing queued yet
	from := runtimetest.Key(t, 1).DID().String()
	bodies := []string{
		"not json",
		`{"jsonrpc":"2.0","id":1,"method":"message/send","method":"x","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"message/send","params":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{}}`,
	}
	ctx := context.Background()
	for _, b := range bodies {
		_, err := w.queue.Enqueue(ctx, queue.Record{Agent: w.key.DID().String(), From: from, Body: []byte(b)},
			queuebounds.Bounds{MaxMessages: 100, MaxPerPeer: 100, MaxBytes: 1 << 20, MaxPeerBytes: 1 << 20, MaxMessageSize: 1 << 20, TTL: 7 * 24 * time.Hour}, w.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
	}
	start, end := w.window.Next(t0)
	w.clock.Set(start)
	w.waitPhase(runtime.PhaseDrain)
	w.clock.Set(end)
	r := w.nextWake()
	if r.Drain.Acked != len(bodies) || r.Drain.Deferred != 0 || r.Drain.Rejected[drain.CauseOpaque] != len(bodies) {
		t.Fatalf("first wake: drain %v; want all %d acknowledged as %s", r.Drain, len(bodies), drain.CauseOpaque)
	}
	if st, _ := w.queue.Stats(ctx, w.key.DID().String(), w.clock.Now()); st.Messages != 0 {
		t.Fatalf("relay still holds %d refused records", st.Messages)
	}
	start, end = w.window.Next(end)
	w.clock.Set(start)
	w.waitPhase(runtime.PhaseDrain)
	w.clock.Set(end)
	if r := w.nextWake(); r.Drain.Records != 0 {
		t.Fatalf("next wake drained %v; want nothing redelivered", r.Drain)
	}
	w.shutdown()
}
