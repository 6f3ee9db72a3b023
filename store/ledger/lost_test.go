package ledger

import (
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func (e *env) lost(t testing.TB) LostSummary {
	t.Helper()
	var s LostSummary
	if err := e.db.View(func(tx *bolt.Tx) (err error) { s, err = e.l.LostHandOffs(tx); return err }); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLostHandOffsAreKeptAcrossRestartsUntilTheRetention: a recorded lost
// hand-off survives restarts, stamped with the time and incarnation that
// found it; Open keeps it past the retention until it was logged
// (MarkLostLogged), then sweeps it, without counting it as dropped.
func TestLostHandOffsAreKeptAcrossRestartsUntilTheRetention(t *testing.T) {
	e := newEnv(t)
	if err := e.update(t, func(tx *bolt.Tx) error {
		return e.l.RecordLost(tx, Lost{ObjectID: "o1", Issuer: "did:example:alice", Purpose: "comms:message", Seq: 7, Logged: true})
	}); err != nil {
		t.Fatal(err)
	}
	e.restart(t)
	s := e.lost(t)
	if len(s.Kept) != 1 || s.Count() != 1 {
		t.Fatalf("after a restart the ledger keeps %+v", s)
	}
	if got := s.Kept[0]; got.ObjectID != "o1" || got.Seq != 7 || got.ID != 1 || got.Logged || !got.RecordedAt.Equal(t0) || got.Incarnation != 1 {
		t.Fatalf("kept %+v; want o1, seq 7, id 1, not logged, recorded at %v by incarnation 1", got, t0)
	}
	e.clock.Advance(25 * time.Hour)
	e.restart(t)
	if s := e.lost(t); len(s.Kept) != 1 {
		t.Fatalf("swept past the retention (24h) before it was logged: %+v", s)
	}
	if err := e.update(t, func(tx *bolt.Tx) error { return e.l.MarkLostLogged(tx, []uint64{1, 99}) }); err != nil {
		t.Fatal(err)
	}
	if s := e.lost(t); !s.Kept[0].Logged {
		t.Fatalf("not marked logged: %+v", s.Kept[0])
	}
	e.clock.Set(t0.Add(23 * time.Hour))
	e.restart(t)
	if s := e.lost(t); len(s.Kept) != 1 {
		t.Fatalf("swept before the retention (24h): %+v", s)
	}
	e.clock.Set(t0.Add(25 * time.Hour))
	e.restart(t)
	if s := e.lost(t); len(s.Kept) != 0 || s.Count() != 0 {
		t.Fatalf("kept past the retention: %+v", s)
	}
}

// TestLostHandOffsAreBounded: past MaxLost the oldest records are dropped
// and counted, so Count never understates what was lost.
func TestLostHandOffsAreBounded(t *testing.T) {
	e := newEnv(t)
	const n = MaxLost + 5
	if err := e.update(t, func(tx *bolt.Tx) error {
		for i := range n {
			if err := e.l.RecordLost(tx, Lost{ObjectID: fmt.Sprint("o", i+1)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s := e.lost(t)
	if len(s.Kept) != MaxLost || s.Dropped != 5 || s.Count() != n || s.Kept[0].ObjectID != "o6" || s.Kept[MaxLost-1].ObjectID != fmt.Sprint("o", n) {
		t.Fatalf("kept %d (first %q), dropped %d, count %d; want the newest %d, 5 dropped", len(s.Kept), s.Kept[0].ObjectID, s.Dropped, s.Count(), MaxLost)
	}
}
