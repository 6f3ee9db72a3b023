package queuetest

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// reopenKeepsEverything: records, acknowledgements, the per-peer counts
// and the last seq survive closing the store and opening it again.
func reopenKeepsEverything(t *testing.T, open Opener) {
	s := open(t)
	b := queuebounds.Default()
	b.MaxPerPeer = 2
	var want []queue.Record
	for _, r := range []queue.Record{Msg(Alice, "one"), Msg(Bob, "two"), {Agent: Agent, From: Alice, Kind: queue.KindHandshake, Body: []byte("commit")}} {
		want = append(want, MustEnqueue(t, s, r, b, T0))
	}
	if err := s.Ack(bg, Agent, []uint64{2}); err != nil {
		t.Fatal(err)
	}
	want = append(want[:1], want[2])
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t)
	defer s.Close()
	if diff := cmp.Diff(want, next(t, s, 0, 10, T0)); diff != "" {
		t.Errorf("records after reopen (-want +got):\n%s", diff)
	}
	if _, err := s.Enqueue(bg, Msg(Alice, "three"), b, T0); Outcome(err) != queue.BoundPeer {
		t.Errorf("Enqueue after reopen = %v, want the peer bound (alice holds 2)", err)
	}
	if r := MustEnqueue(t, s, Msg(Bob, "four"), b, T0); r.Seq != 4 {
		t.Errorf("seq after reopen = %d, want 4", r.Seq)
	}
}

// closed: every call after Close returns ErrClosed, a second Close too.
func closed(t *testing.T, open Opener) {
	s := open(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(bg, Msg(Alice, "x"), queuebounds.Default(), T0); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Enqueue after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Next(bg, Agent, 0, 1, T0); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Next after Close = %v, want ErrClosed", err)
	}
	if err := s.Ack(bg, Agent, []uint64{1}); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Ack after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Purge(bg, T0); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Purge after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Stats(bg, Agent, T0); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("Stats after Close = %v, want ErrClosed", err)
	}
	if err := s.Close(); !errors.Is(err, queue.ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
}
