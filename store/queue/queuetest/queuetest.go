// Package queuetest checks that an implementation of store/queue.Store
// keeps the contract the interface documents: Enqueue sets Seq (per agent,
// strictly increasing, never reused), the times and nothing else; Next
// returns live records in Seq order; Ack deletes; expiry follows the now
// argument; every bound (messages, bytes, per peer, maximum size,
// handshake reserve) holds exactly, also when 64 goroutines race for the
// last slots; what was stored comes back from a store opened again over
// the same data; and a closed store refuses every call. Bolt's tests run
// it (store/queue/queuetest_test.go); so do the tests of every other
// backend.
package queuetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/store/storetest"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// Opener opens a Store over one test's data: every call returns a new
// Store over the same data, which the caller closes.
type Opener = storetest.Opener[queue.Store]

// Run runs every check, each over fresh data from newOpener.
func Run(t *testing.T, newOpener func(t *testing.T) Opener) {
	storetest.RunContract(t, []storetest.Check[queue.Store]{
		{Name: "EnqueueSetsFields", Check: enqueueSetsFields},
		{Name: "NextAckOrder", Check: nextAckOrder},
		{Name: "Expiry", Check: expiry},
		{Name: "Bounds", Check: bounds},
		{Name: "BadArguments", Check: badArguments},
		{Name: "RaceForLastSlots", Check: raceForLastSlots},
		{Name: "ReopenKeepsEverything", Check: reopenKeepsEverything},
		{Name: "Closed", Check: closed},
	}, newOpener)
}

// T0 is the suite's start time: far from the real clock, so that a store
// which expires records by its own clock instead of the now argument fails.
var T0 = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

// DIDs of the suite's senders and recipient.
const (
	Alice = "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"
	Bob   = "did:key:z6MknGc3ocHs3zdPiJbnaaqDi58NGb4pk1Sp9WxWufuXSdxf"
	Agent = "did:key:z6MkAgentAgentAgentAgentAgentAgentAgentAgentAge"
)

var bg = context.Background()

// Msg is an ordinary record for Agent from from.
func Msg(from, body string) queue.Record {
	return queue.Record{Agent: Agent, From: from, Body: []byte(body)}
}

// MustEnqueue enqueues r and fails the test on an error.
func MustEnqueue(t testing.TB, s queue.Store, r queue.Record, b queuebounds.Bounds, now time.Time) queue.Record {
	t.Helper()
	out, err := s.Enqueue(bg, r, b, now)
	if err != nil {
		t.Fatalf("Enqueue(from %s, %d bytes) = %v", r.From, len(r.Body), err)
	}
	return out
}

// Outcome names an Enqueue result: "ok", a FullError kind, "too-large" or
// the error's text.
func Outcome(err error) string {
	var fe *queue.FullError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &fe):
		if !errors.Is(err, queue.ErrFull) {
			return "FullError not ErrFull"
		}
		return fe.Kind
	case errors.Is(err, queue.ErrTooLarge):
		return "too-large"
	}
	return err.Error()
}

func seqs(rs []queue.Record) []uint64 {
	out := []uint64{}
	for _, r := range rs {
		out = append(out, r.Seq)
	}
	return out
}

func next(t *testing.T, s queue.Store, after uint64, max int, now time.Time) []queue.Record {
	t.Helper()
	rs, err := s.Next(bg, Agent, after, max, now)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func stats(t *testing.T, s queue.Store, now time.Time) queue.Stats {
	t.Helper()
	st, err := s.Stats(bg, Agent, now)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func enqueueSetsFields(t *testing.T, open Opener) {
	s := open(t)
	defer s.Close()
	b := queuebounds.Default()
	now := time.Date(2026, 1, 15, 13, 0, 0, 5, time.FixedZone("CET", 3600))
	got := MustEnqueue(t, s, queue.Record{Agent: Agent, From: Alice, Kind: queue.KindHandshake, Body: []byte("welcome"),
		Seq: 99, EnqueuedAt: T0.Add(-time.Hour), ExpiresAt: T0}, b, now)
	want := queue.Record{Seq: 1, Agent: Agent, From: Alice, Kind: queue.KindHandshake, Body: []byte("welcome"),
		EnqueuedAt: now.UTC(), ExpiresAt: now.UTC().Add(b.TTL)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Enqueue returned (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]queue.Record{want}, next(t, s, 0, 10, now)); diff != "" {
		t.Errorf("Next returned (-want +got):\n%s", diff)
	}
	if rs, err := s.Next(bg, "did:key:nobody", 0, 10, now); err != nil || len(rs) != 0 {
		t.Errorf("Next for an unknown agent = %v, %v; want none", rs, err)
	}
}

func nextAckOrder(t *testing.T, open Opener) {
	s := open(t)
	defer s.Close()
	b := queuebounds.Default()
	for i := range 10 {
		if r := MustEnqueue(t, s, Msg(Alice, string(rune('a'+i))), b, T0); r.Seq != uint64(i+1) {
			t.Fatalf("enqueue %d got seq %d", i, r.Seq)
		}
	}
	if other := MustEnqueue(t, s, queue.Record{Agent: "did:key:other", From: Alice, Body: []byte("z")}, b, T0); other.Seq != 1 {
		t.Errorf("another agent's first seq = %d, want 1 (seqs are per agent)", other.Seq)
	}
	for _, tt := range []struct {
		after uint64
		max   int
		want  []uint64
	}{
		{0, 3, []uint64{1, 2, 3}}, {3, 3, []uint64{4, 5, 6}}, {8, 5, []uint64{9, 10}},
		{10, 5, []uint64{}}, {0, 0, []uint64{}}, {^uint64(0), 5, []uint64{}},
	} {
		if diff := cmp.Diff(tt.want, seqs(next(t, s, tt.after, tt.max, T0))); diff != "" {
			t.Errorf("Next(after %d, max %d) seqs (-want +got):\n%s", tt.after, tt.max, diff)
		}
	}
	if err := s.Ack(bg, Agent, []uint64{1, 3, 3, 42}); err != nil {
		t.Fatal(err)
	}
	got := next(t, s, 0, 100, T0)
	if diff := cmp.Diff([]uint64{2, 4, 5, 6, 7, 8, 9, 10}, seqs(got)); diff != "" || string(got[0].Body) != "b" {
		t.Errorf("after Ack(1, 3, 3, 42) seqs (-want +got):\n%s\nfirst body %q, want b", diff, got[0].Body)
	}
	if err := s.Ack(bg, "did:key:nobody", []uint64{1}); err != nil {
		t.Errorf("Ack for an unknown agent = %v, want nil", err)
	}
	if err := s.Ack(bg, Agent, seqs(got)); err != nil {
		t.Fatal(err)
	}
	if st := stats(t, s, T0); st != (queue.Stats{}) {
		t.Errorf("Stats after acknowledging everything = %+v, want zero", st)
	}
	if r := MustEnqueue(t, s, Msg(Alice, "new"), b, T0); r.Seq != 11 {
		t.Errorf("seq after acknowledging everything = %d, want 11 (never reused)", r.Seq)
	}
}
