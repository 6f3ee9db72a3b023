package queue

import (
	"context"
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// rewrite applies fn to the stored value of agent's record seq.
func rewrite(t *testing.T, s *Bolt, seq uint64, fn func(v []byte) []byte) {
	t.Helper()
	err := s.DB().Update(func(tx *bolt.Tx) error {
		recs := tx.Bucket(bucketAgents).Bucket([]byte(agent)).Bucket(bucketRecords)
		return recs.Put(seqKey(seq), fn(append([]byte(nil), recs.Get(seqKey(seq))...)))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNextLeavesOutDamagedRecords: a record whose body changed on disk
// fails its checksum; Next leaves it out, names it in a *DamagedError
// and still returns max sound records; the damaged record can be
// acknowledged (deleted) and counted out of Stats.
func TestNextLeavesOutDamagedRecords(t *testing.T) {
	s, _ := mustOpen(t)
	b := queuebounds.Default()
	for _, body := range []string{"one", "two", "three", "four"} {
		mustEnqueue(t, s, msg(alice, body), b, t0)
	}
	rewrite(t, s, 2, func(v []byte) []byte { v[len(v)-1] ^= 0x20; return v })
	got, err := s.Next(context.Background(), agent, 0, 3, t0)
	var de *DamagedError
	if !errors.As(err, &de) || !errors.Is(err, ErrCorrupt) || len(de.Seqs) != 1 || de.Seqs[0] != 2 || !errors.Is(de.First, errChecksum) {
		t.Fatalf("Next over a damaged record: %v, want a *DamagedError naming seq 2 for a checksum mismatch", err)
	}
	if len(got) != 3 || got[0].Seq != 1 || got[1].Seq != 3 || got[2].Seq != 4 {
		t.Fatalf("Next returned %v, want seqs 1, 3, 4", seqsOf(got))
	}
	if st, err := s.Stats(context.Background(), agent, t0); err != nil || st.Messages != 4 {
		t.Fatalf("Stats = %+v, %v; want 4 messages (the damaged one is still held)", st, err)
	}
	n, err := s.AckCount(context.Background(), agent, []uint64{2})
	if err != nil || n != 1 {
		t.Fatalf("AckCount(damaged seq 2) = %d, %v; want 1 deleted", n, err)
	}
	checkConsistent(t, s)
}

// TestVersion1RecordsStillRead: a queue.db written before records carried
// a checksum (version byte 1) is served and acknowledged as before.
func TestVersion1RecordsStillRead(t *testing.T) {
	s, _ := mustOpen(t)
	mustEnqueue(t, s, msg(alice, "old"), queuebounds.Default(), t0)
	rewrite(t, s, 1, func(v []byte) []byte { return append([]byte{recordVersion1}, v[1+checksumLen:]...) })
	got, err := s.Next(context.Background(), agent, 0, 10, t0)
	if err != nil || len(got) != 1 || string(got[0].Body) != "old" {
		t.Fatalf("Next over a version-1 record = %v, %v; want it served", got, err)
	}
	if n, err := s.AckCount(context.Background(), agent, []uint64{1}); err != nil || n != 1 {
		t.Fatalf("AckCount = %d, %v; want 1", n, err)
	}
	checkConsistent(t, s)
}

// TestAckCountDeletedNothing: AckCount counts what it deleted; seqs that
// are not there (acknowledged before, or never queued) count nothing and,
// as the Store contract says, are no error.
func TestAckCountDeletedNothing(t *testing.T) {
	s, _ := mustOpen(t)
	mustEnqueue(t, s, msg(alice, "x"), queuebounds.Default(), t0)
	for _, c := range []struct {
		agent string
		seqs  []uint64
		want  int
	}{{agent, []uint64{1, 1, 9}, 1}, {agent, []uint64{1}, 0}, {"did:key:nobody", []uint64{1}, 0}} {
		if n, err := s.AckCount(context.Background(), c.agent, c.seqs); err != nil || n != c.want {
			t.Errorf("AckCount(%s, %v) = %d, %v; want %d", c.agent, c.seqs, n, err, c.want)
		}
	}
}

func seqsOf(rs []Record) []uint64 {
	out := make([]uint64, len(rs))
	for i, r := range rs {
		out[i] = r.Seq
	}
	return out
}
