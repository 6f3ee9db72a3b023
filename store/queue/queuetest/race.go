package queuetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// Racers is how many goroutines race for the last slots.
const Racers = 64

type raceCase struct {
	name    string
	bounds  queuebounds.Bounds
	prefill int
	pre     func(i int) queue.Record
	racer   func(i int) queue.Record
	free    int    // slots left after prefill
	kind    string // the bound the losers hit
}

func raceCases() []raceCase {
	from := func(prefix string) func(int) string {
		return func(i int) string { return fmt.Sprint("did:key:", prefix, i) }
	}
	pre, racer := from("pre"), from("racer")
	return []raceCase{
		{"messages", with(func(b *queuebounds.Bounds) { b.MaxMessages = 100 }), 90,
			func(i int) queue.Record { return Msg(pre(i), "x") }, func(i int) queue.Record { return Msg(racer(i), "y") }, 10, queue.BoundMessages},
		{"bytes", with(func(b *queuebounds.Bounds) { b.MaxBytes = 1000 }), 9,
			func(i int) queue.Record { return Msg(pre(i), string(bytes.Repeat([]byte("x"), 100))) },
			func(i int) queue.Record { return Msg(racer(i), "0123456789") }, 10, queue.BoundBytes},
		{"peer", with(func(b *queuebounds.Bounds) { b.MaxPerPeer = 20 }), 13,
			func(int) queue.Record { return Msg(Alice, "x") }, func(int) queue.Record { return Msg(Alice, "y") }, 7, queue.BoundPeer},
		{"peer bytes", with(func(b *queuebounds.Bounds) { b.MaxPeerBytes = 200 }), 13,
			func(int) queue.Record { return Msg(Alice, "0123456789") }, func(int) queue.Record { return Msg(Alice, "9876543210") }, 7, queue.BoundPeer},
		{"handshake reserve", with(func(b *queuebounds.Bounds) { b.MaxMessages, b.HandshakeMessages = 30, 16 }), 30,
			func(i int) queue.Record { return Msg(pre(i), "x") },
			func(i int) queue.Record {
				return queue.Record{Agent: Agent, From: racer(i), Kind: queue.KindHandshake, Body: []byte("commit")}
			}, 16, queue.BoundMessages},
	}
}

// raceForLastSlots lets Racers goroutines race for the last free slots of
// each bound, each bound for its own agent: exactly the free slots are taken, every loser is refused by
// the bound, and the seqs taken are contiguous.
func raceForLastSlots(t *testing.T, open Opener) {
	s := open(t)
	defer s.Close()
	for _, tt := range raceCases() {
		t.Run(tt.name, func(t *testing.T) {
			agent := "did:key:race-" + tt.name
			to := func(f func(int) queue.Record) func(int) queue.Record {
				return func(i int) queue.Record { r := f(i); r.Agent = agent; return r }
			}
			for i := range tt.prefill {
				MustEnqueue(t, s, to(tt.pre)(i), tt.bounds, T0)
			}
			count := Race(s, Racers, to(tt.racer), tt.bounds)
			if count["ok"] != tt.free || count[tt.kind] != Racers-tt.free || len(count) != 2 {
				t.Errorf("outcomes = %v, want %d ok and %d %s", count, tt.free, Racers-tt.free, tt.kind)
			}
			if err := CheckLive(s, agent, tt.bounds, tt.prefill+tt.free); err != nil {
				t.Error(err)
			}
		})
	}
}

// Race starts n goroutines at once, goroutine i enqueueing racer(i) with
// b at T0, and counts their outcomes (see Outcome).
func Race(s queue.Store, n int, racer func(i int) queue.Record, b queuebounds.Bounds) map[string]int {
	start := make(chan struct{})
	results := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			_, err := s.Enqueue(bg, racer(i), b, T0)
			results[i] = Outcome(err)
		})
	}
	close(start)
	wg.Wait()
	count := map[string]int{}
	for _, r := range results {
		count[r]++
	}
	return count
}

// CheckLive checks that agent holds want live records at T0, numbered 1 to
// want, within b (with its handshake reserve), and that Stats agrees with
// Next.
func CheckLive(s queue.Store, agent string, b queuebounds.Bounds, want int) error {
	rs, err := s.Next(bg, agent, 0, 10000, T0)
	if err != nil {
		return err
	}
	var errs []error
	var live queue.Stats
	peers := map[string]int{}
	for i, r := range rs {
		if r.Seq != uint64(i+1) {
			errs = append(errs, fmt.Errorf("record %d has seq %d: seqs not contiguous", i, r.Seq))
			break
		}
		live.Messages++
		live.Bytes += int64(len(r.Body))
		if r.Kind == queue.KindHandshake {
			live.Handshakes++
			live.HandshakeBytes += int64(len(r.Body))
		}
		peers[r.From]++
	}
	if len(rs) != want {
		errs = append(errs, fmt.Errorf("%d live records, want %d", len(rs), want))
	}
	if live.Messages > b.MaxMessages+b.HandshakeMessages || live.Bytes > b.MaxBytes+b.HandshakeBytes {
		errs = append(errs, fmt.Errorf("live %+v: overfilled (%+v)", live, b))
	}
	for p, n := range peers {
		if p != "" && n > b.MaxPerPeer+b.HandshakeMessages {
			errs = append(errs, fmt.Errorf("%d records from %s: per-peer bound %d overfilled", n, p, b.MaxPerPeer))
		}
	}
	st, err := s.Stats(bg, agent, T0)
	if err != nil {
		return err
	}
	if diff := cmp.Diff(live, st); diff != "" {
		errs = append(errs, fmt.Errorf("stats disagree with next (-next +stats):\n%s", diff))
	}
	return errors.Join(errs...)
}
