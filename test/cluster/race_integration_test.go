//go:build integration

package cluster

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// racers is how many senders race, spread over the relays.
const racers = 64

type raceCase struct {
	name    string
	bounds  queuebounds.Bounds // the device's, tighter than the relays'
	prefill int
	sender  func(i int) int // the key number of racer i (prefill: -1-i)
	free    int
	status  int
	kind    string
}

var raceCases = []raceCase{
	{"messages", queuebounds.Bounds{MaxMessages: 40}, 30, func(i int) int { return 1000 + i }, 10, http.StatusInsufficientStorage, "messages"},
	{"peer", queuebounds.Bounds{MaxPerPeer: 10}, 3, func(int) int { return 999 }, 7, http.StatusTooManyRequests, "peer"},
}

// TestLastSlotsAcrossRelays: for one device's queue and for one sender's
// per-peer cap, 64 senders spread over 3 relays race for the last free
// slots, 3 trials each: exactly the free slots are answered 503 queued,
// every other sender is refused with the bound's status and kind, and the
// device then drains exactly the queued requests, seqs 1 to n.
func TestLastSlotsAcrossRelays(t *testing.T) {
	f := startFleet(t, 3)
	const trials = 3
	for _, tc := range raceCases {
		t.Run(tc.name, func(t *testing.T) {
			for trial := range trials {
				dev := relaytest.Key(t, 10*trial+len(tc.name))
				publish(t, f.relays[trial%3].addr, dev, device{mode: "sleep", bounds: &tc.bounds})
				queued := raceTrial(t, f, dev, tc, trial)
				recs := drain(t, f.relays[(trial+1)%3].addr, dev, true)
				checkDrained(t, recs, tc.prefill+tc.free, queued, nil)
			}
		})
	}
}

// raceTrial prefills dev's queue and races the senders; it returns the ids
// answered queued.
func raceTrial(t *testing.T, f *fleet, dev *did.PrivateKey, tc raceCase, trial int) map[string]bool {
	agent := dev.DID().String()
	queued := map[string]bool{}
	for i := range tc.prefill {
		k := relaytest.Key(t, tc.sender(-1-i))
		id := fmt.Sprintf("t%d-pre%d", trial, i)
		mustQueue(t, f.relays[i%3].addr, agent, relaytest.Token(t, k, publicURL), body(id, 20))
		queued[id] = true
	}
	toks := make([]string, racers)
	for i := range toks {
		toks[i] = relaytest.Token(t, relaytest.Key(t, tc.sender(i)), publicURL)
	}
	answers := make([]answer, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			<-start
			var err error
			answers[i], err = send(f.relays[i%3].addr, agent, toks[i], body(fmt.Sprintf("t%d-racer%d", trial, i), 20))
			if err != nil {
				t.Errorf("racer %d: %v", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	ok := 0
	for i, a := range answers {
		switch {
		case a.status == http.StatusServiceUnavailable && a.Queued:
			ok++
			queued[fmt.Sprintf("t%d-racer%d", trial, i)] = true
		case a.status != tc.status || a.Queued || a.Kind != tc.kind:
			t.Errorf("trial %d: racer %d answered %v, want 503 queued or %d kind %q", trial, i, a, tc.status, tc.kind)
		}
	}
	if ok != tc.free {
		t.Errorf("trial %d: %d racers queued, want exactly the %d free slots", trial, ok, tc.free)
	}
	t.Logf("trial %d: %d of %d racers queued, %d refused (%s)", trial, ok, racers, racers-ok, tc.kind)
	return queued
}

// checkDrained: the device received each of the want records answered
// queued once, seqs from 1 without a gap; a record answered
// store_unconfirmed (maybe) may be among them, once, and nothing else.
func checkDrained(t *testing.T, recs []wire.Record, want int, queued, maybe map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	confirmed := 0
	for i, r := range recs {
		id := recordID(t, r)
		if r.Seq != uint64(i+1) || seen[id] || !(queued[id] || maybe[id]) {
			t.Errorf("record %d: seq %d id %s (seen before %v, answered queued %v, unconfirmed %v)", i, r.Seq, id, seen[id], queued[id], maybe[id])
		}
		seen[id] = true
		if queued[id] {
			confirmed++
		}
	}
	if confirmed != want || confirmed != len(queued) {
		t.Errorf("drained %d records (%d answered queued), want %d; %d were answered queued, %d unconfirmed", len(recs), confirmed, want, len(queued), len(maybe))
	}
}
