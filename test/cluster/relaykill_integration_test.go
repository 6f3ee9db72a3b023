//go:build integration

package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// TestRelayKilledMidDrain: a device drains its queue through relay 1,
// acknowledging 3 batches of 20 and holding a fourth unacknowledged, when
// relay 1 is killed with SIGKILL; it links again through relay 2 and
// drains the rest. After dedup by seq every queued request was delivered
// exactly once, a seq always carried the same request, and the batch that
// was not acknowledged came again.
func TestRelayKilledMidDrain(t *testing.T) {
	const senders, perSender, batch = 8, 25, 20
	f := startFleet(t, 3)
	dev := relaytest.Key(t, 9)
	publish(t, f.relays[0].addr, dev, device{mode: "sleep"})
	queued := map[string]bool{}
	for s := range senders {
		tok := relaytest.Token(t, relaytest.Key(t, 3000+s), publicURL)
		for i := range perSender {
			id := fmt.Sprintf("s%d-%d", s, i)
			mustQueue(t, f.relays[(s+i)%3].addr, dev.DID().String(), tok, body(id, 100))
			queued[id] = true
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := link.Dial(ctx, link.Config{RelayURL: f.relays[0].addr, Audience: publicURL, Key: dev})
	if err != nil {
		t.Fatal(err)
	}
	var first []wire.Record
	var after uint64
	for n := range 4 {
		recs, _, err := c.Pull(ctx, after, batch)
		if err != nil || len(recs) != batch {
			t.Fatalf("pull %d = %d records, %v; want %d", n, len(recs), err, batch)
		}
		first = append(first, recs...)
		after = recs[len(recs)-1].Seq
		if n < 3 {
			if err := c.Ack(ctx, seqsOf(recs)); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.relays[0].kill()
	c.Close()
	rest := drain(t, f.relays[1].addr, dev, true)
	bySeq := map[uint64]string{}
	for _, r := range append(first, rest...) {
		id := recordID(t, r)
		if prev, ok := bySeq[r.Seq]; ok && prev != id {
			t.Errorf("seq %d carried %s and %s", r.Seq, prev, id)
		}
		bySeq[r.Seq] = id
	}
	delivered := map[string]int{}
	for _, id := range bySeq {
		delivered[id]++
	}
	for id := range queued {
		if delivered[id] != 1 {
			t.Errorf("%s delivered %d times after dedup by seq, want 1", id, delivered[id])
		}
	}
	if len(delivered) != len(queued) || len(rest) != len(queued)-3*batch {
		t.Errorf("%d distinct delivered, %d after the relink; want %d and %d (the unacknowledged batch again)", len(delivered), len(rest), len(queued), len(queued)-3*batch)
	}
	t.Logf("%d queued; %d delivered by relay 1 (%d acknowledged) before SIGKILL, %d by relay 2", len(queued), len(first), 3*batch, len(rest))
}

func seqsOf(recs []wire.Record) []uint64 {
	out := make([]uint64, len(recs))
	for i, r := range recs {
		out[i] = r.Seq
	}
	return out
}
