package relay

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// TestHistoryOfWakes: each wake a device publishes its state at is kept in
// its history with the queue depth then, the records drained over the
// link, the windows its schedule promised and it missed before, and,
// once the next wake's status reports it, its awake time; a state
// published again within a wake adds none.
func TestHistoryOfWakes(t *testing.T) {
	h := newHarness(t, nil)
	dev := didtest.Key(t, 1)
	id := dev.DID().String()
	ctx := context.Background()
	for i := range 2 {
		r := queue.Record{Agent: id, From: "did:key:zSender", Body: []byte{byte(i)}}
		if _, err := h.q.Enqueue(ctx, r, queuebounds.Default(), t0); err != nil {
			t.Fatal(err)
		}
	}
	first := t0.Add(-time.Minute)
	publish := func(o deviceOpts, s wire.Status, next time.Time) {
		t.Helper()
		c := h.dialWith(t, dev, nil)
		st := h.state(t, dev, c.Hello(), string(wake.HourlyWake), o)
		st.Status, st.NextWake = signedStatus(t, dev, wire.PurposeStatus, s), next.Unix()
		for range 2 { // the second within the same wake adds nothing
			if _, err := c.Publish(ctx, st); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Drain(ctx, 10, func(context.Context, []wire.Record) error { return nil }); err != nil {
			t.Fatal(err)
		}
		c.Close()
		<-h.relay.Link().Gone(id)
	}
	publish(deviceOpts{}, wire.Status{Version: "1", Wake: &wire.StatusWake{At: first, Reason: "rtc"}}, t0.Add(time.Hour))
	// Two windows late: t0+1h and t0+2h passed.
	h.clk.Set(t0.Add(3*time.Hour + time.Minute))
	second := t0.Add(3 * time.Hour)
	publish(deviceOpts{}, wire.Status{Version: "1", Wake: &wire.StatusWake{At: second, Reason: "message"},
		LastWake: &wire.StatusWake{At: first, Reason: "rtc", AwakeMs: 1200}}, t0.Add(4*time.Hour))
	got, err := h.states.Wakes(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := []agents.Wake{
		{At: first, Reason: "rtc", AwakeMs: 1200, Drained: 2, QueueDepth: 2, Relay: h.relay.cfg.PublicURL},
		{At: second, Reason: "message", QueueDepth: 0, Missed: 2, Relay: h.relay.cfg.PublicURL},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
}

// TestHistoryWithoutStatus: a device that sends no status gets one wake
// per link, at the time the link came up, however often it publishes.
func TestHistoryWithoutStatus(t *testing.T) {
	h := newHarness(t, nil)
	dev := didtest.Key(t, 1)
	ctx := context.Background()
	c := h.dialWith(t, dev, nil)
	for range 2 {
		if _, err := c.Publish(ctx, h.state(t, dev, c.Hello(), string(wake.Sleep), deviceOpts{})); err != nil {
			t.Fatal(err)
		}
		h.clk.Advance(time.Minute)
	}
	got, err := h.states.Wakes(ctx, dev.DID().String())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].At.Equal(t0) || got[0].Reason != "" {
		t.Errorf("history of one link without status = %+v, want one wake at %v", got, t0)
	}
}
