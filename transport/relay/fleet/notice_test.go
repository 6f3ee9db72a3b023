package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/relay/fleet"
)

// TestNoNotifyWithoutLink counts the NATS messages a relay sends for one
// queued record, store and fleet together, in the steady state (the
// agent's state and queue already in the relay's memory): for a device no
// relay holds a link for, one, the record's publish (the presence view
// answers whether some relay holds the link, no `up` request, and no
// notify follows); with the device linked to another relay, two, the
// publish and the notify.
func TestNoNotifyWithoutLink(t *testing.T) {
	run := startFleetOn(t, 2, nil)
	dev := didtest.Key(t, 1)
	c := run.linkDevice(t, 0, dev, "sleep")
	c.Close()
	run.waitUp(t, 0, dev, false)
	sent := func() uint64 { run.conns[1].Flush(); return run.conns[1].Stats().OutMsgs }
	n := 0
	queued := func() {
		t.Helper()
		n++
		if status, body := post(t, run.urls[1], dev, didtest.Key(t, byte(10+n))); status != 503 || !strings.Contains(string(body), `"queued":true`) {
			t.Fatalf("request for a sleeping device = %d %s, want 503 queued", status, body)
		}
	}
	queued() // the first reads the agent's state and queue
	for _, linked := range []bool{false, true} {
		if linked {
			run.linkDevice(t, 0, dev, "sleep")
		}
		for i := range 20 {
			before := sent()
			queued()
			want := uint64(1) // the publish
			if linked {
				want = 2 // the publish, the notify
			}
			if got := sent() - before; got != want {
				t.Errorf("linked %v, request %d: relay B sent %d NATS messages for one queued record, want %d", linked, i, got, want)
			}
		}
	}
}

// TestLinkedNoticeAfter: a record stored for a device that linked after
// the storing relay found no link (and so sent no notify) reaches the
// device: fleet.LinkedNoticeAfter after its link came up, its relay tells
// it to pull, and the pull finds the record.
func TestLinkedNoticeAfter(t *testing.T) {
	clk := clocktest.New(time.Now())
	run := startFleetOn(t, 2, clk)
	// Each relay's presence refresh sleeps on clk too, from a goroutine of
	// its own: the timer awaited below must be the notice's, not one of
	// theirs made late.
	for {
		made := clk.TimerCreated()
		if clk.Pending() >= len(run.urls) {
			break
		}
		<-made
	}
	dev, sender := didtest.Key(t, 1), didtest.Key(t, 2)
	created := clk.TimerCreated()
	c := linkDevice(t, run.urls[0], dev, "sleep")
	<-created
	// The record another relay stored without a notify, after the drain
	// at link-up.
	rec := queue.Record{Agent: dev.DID().String(), From: sender.DID().String(), Body: []byte(`{"x":1}`)}
	if _, err := run.store.Queue().Enqueue(context.Background(), rec, queuebounds.Default(), time.Now()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(fleet.LinkedNoticeAfter)
	select {
	case <-c.Queued():
	case <-time.After(10 * time.Second):
		t.Fatal("no queued notice fleet.LinkedNoticeAfter after the link came up")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recs, _, err := c.Pull(ctx, 0, 10)
	if err != nil || len(recs) != 1 || string(recs[0].Body) != `{"x":1}` {
		t.Fatalf("pull after the notice = %v, %v; want the one record", recs, err)
	}
}
