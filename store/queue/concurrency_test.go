package queue

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

const racers = 64

// slotRace is a bound with a few free slots and the records that race for
// them.
type slotRace struct {
	name    string
	bounds  queuebounds.Bounds
	prefill []Record
	racer   func(i int) Record
	free    int    // slots left after prefill
	kind    string // the bound the losers hit
	check   func(Stats) error
}

var slotRaces = []slotRace{
	{
		name:    "messages",
		bounds:  with(func(b *queuebounds.Bounds) { b.MaxMessages = 100 }),
		prefill: records(90, func(i int) Record { return msg(fmt.Sprint("did:key:pre", i), "x") }),
		racer:   func(i int) Record { return msg(fmt.Sprint("did:key:racer", i), "y") },
		free:    10,
		kind:    BoundMessages,
		check:   atMost(100, 1<<30),
	},
	{
		name:    "bytes",
		bounds:  with(func(b *queuebounds.Bounds) { b.MaxBytes = 1000 }),
		prefill: records(9, func(i int) Record { return msg(fmt.Sprint("did:key:pre", i), string(bytes.Repeat([]byte("x"), 100))) }),
		racer:   func(i int) Record { return msg(fmt.Sprint("did:key:racer", i), "0123456789") },
		free:    10,
		kind:    BoundBytes,
		check:   atMost(1<<30, 1000),
	},
	{
		name:    "peer",
		bounds:  with(func(b *queuebounds.Bounds) { b.MaxPerPeer = 20 }),
		prefill: records(13, func(int) Record { return msg(alice, "x") }),
		racer:   func(int) Record { return msg(alice, "y") },
		free:    7,
		kind:    BoundPeer,
		check:   atMost(20, 1<<30),
	},
	{
		name:    "handshake reserve",
		bounds:  with(func(b *queuebounds.Bounds) { b.MaxMessages, b.HandshakeMessages = 30, 16 }),
		prefill: records(30, func(i int) Record { return msg(fmt.Sprint("did:key:pre", i), "x") }),
		racer: func(i int) Record {
			return Record{Agent: agent, From: fmt.Sprint("did:key:racer", i), Kind: KindHandshake, Body: []byte("commit")}
		},
		free:  16,
		kind:  BoundMessages,
		check: atMost(46, 1<<30),
	},
}

// TestRaceForLastSlots lets 64 goroutines race for the last free slots of
// each bound; exactly the free slots are taken and the bound never
// overfills.
func TestRaceForLastSlots(t *testing.T) {
	for _, tt := range slotRaces {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := mustOpen(t)
			for _, r := range tt.prefill {
				mustEnqueue(t, s, r, tt.bounds, t0)
			}
			count := map[string]int{}
			for _, r := range race(s, tt) {
				count[r]++
			}
			if count["ok"] != tt.free || count[tt.kind] != racers-tt.free || len(count) != 2 {
				t.Errorf("outcomes = %v, want %d ok and %d %s", count, tt.free, racers-tt.free, tt.kind)
			}
			checkAfterRace(t, s, tt)
		})
	}
}

// race runs the racers at once and returns their outcomes.
func race(s *Bolt, tt slotRace) []string {
	start := make(chan struct{})
	results := make([]string, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			<-start
			_, err := s.Enqueue(bg, tt.racer(i), tt.bounds, t0)
			results[i] = outcome(err)
		})
	}
	close(start)
	wg.Wait()
	return results
}

// checkAfterRace checks the queue after a race: within the bound, holding
// the prefill and the winners, with contiguous seqs.
func checkAfterRace(t *testing.T, s *Bolt, tt slotRace) {
	t.Helper()
	st, err := s.Stats(bg, agent, t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := tt.check(st); err != nil {
		t.Error(err)
	}
	if st.Messages != len(tt.prefill)+tt.free {
		t.Errorf("Stats.Messages = %d, want %d", st.Messages, len(tt.prefill)+tt.free)
	}
	rs, err := s.Next(bg, agent, 0, 1000, t0)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if r.Seq != uint64(i+1) {
			t.Fatalf("record %d has seq %d: seqs not contiguous", i, r.Seq)
		}
	}
	checkConsistent(t, s)
}

func records(n int, f func(int) Record) []Record {
	out := make([]Record, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func atMost(messages int, bytes int64) func(Stats) error {
	return func(st Stats) error {
		if st.Messages > messages || st.Bytes > bytes {
			return fmt.Errorf("Stats = %+v: overfilled (limit %d messages, %d bytes)", st, messages, bytes)
		}
		return nil
	}
}
