package queuetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// expiry: a record is live up to and including its ExpiresAt, by the now
// argument alone; Next and Stats hide an expired record before any purge
// and Purge deletes every expired record of every agent, once.
func expiry(t *testing.T, open Opener) {
	s := open(t)
	defer s.Close()
	now := time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC)
	short, long := queuebounds.Default(), queuebounds.Default()
	short.TTL, long.TTL = time.Second, time.Hour
	MustEnqueue(t, s, Msg(Alice, "expires"), short, now)                                           // seq 1
	MustEnqueue(t, s, Msg(Bob, "stays"), long, now)                                                // seq 2
	MustEnqueue(t, s, queue.Record{Agent: "did:key:x", From: Bob, Body: []byte("x1")}, short, now) // other agent
	now = now.Add(500 * time.Millisecond)
	MustEnqueue(t, s, queue.Record{Agent: Agent, From: Alice, Kind: queue.KindHandshake, Body: []byte("hs")}, short, now) // seq 3

	if diff := cmp.Diff(queue.Stats{Messages: 3, Bytes: 14, Handshakes: 1, HandshakeBytes: 2}, stats(t, s, now)); diff != "" {
		t.Errorf("Stats before expiry (-want +got):\n%s", diff)
	}
	now = now.Add(500 * time.Millisecond) // seq 1 expires at exactly now: still live
	if n, err := s.Purge(bg, now); n != 0 || err != nil {
		t.Errorf("Purge at the expiry instant = %d, %v; want 0", n, err)
	}
	now = now.Add(time.Millisecond)
	if diff := cmp.Diff([]uint64{2, 3}, seqs(next(t, s, 0, 100, now))); diff != "" {
		t.Errorf("Next after seq 1 expired (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(queue.Stats{Messages: 2, Bytes: 7, Handshakes: 1, HandshakeBytes: 2}, stats(t, s, now)); diff != "" {
		t.Errorf("Stats after seq 1 expired (-want +got):\n%s", diff)
	}
	now = now.Add(time.Second)
	if diff := cmp.Diff(queue.Stats{Messages: 1, Bytes: 5}, stats(t, s, now)); diff != "" {
		t.Errorf("Stats after seq 3 expired (-want +got):\n%s", diff)
	}
	if n, err := s.Purge(bg, now); err != nil || n != 3 {
		t.Errorf("Purge = %d, %v; want 3 (two of the agent, one of another)", n, err)
	}
	if n, _ := s.Purge(bg, now); n != 0 {
		t.Errorf("second Purge = %d, want 0", n)
	}
	if diff := cmp.Diff([]uint64{2}, seqs(next(t, s, 0, 100, now))); diff != "" {
		t.Errorf("Next after purge (-want +got):\n%s", diff)
	}
	if r := MustEnqueue(t, s, Msg(Alice, "after"), short, now); r.Seq != 4 {
		t.Errorf("seq after purge = %d, want 4", r.Seq)
	}
	if got := next(t, s, 0, 100, now.Add(2*time.Hour)); len(got) != 0 {
		t.Errorf("Next after every record expired = %v, want none", seqs(got))
	}
}
