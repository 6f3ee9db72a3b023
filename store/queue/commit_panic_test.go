package queue

import (
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store"
)

// TestBoltPanicInCommitIsSticky: a panic inside bbolt's own commit (as a
// damaged page that passed the start check makes it panic while it
// rebalances the tree: test/faults' TestDamage once saw the relay die of
// it) fails that batch and every later one with a *store.CorruptError
// naming the file, and the damaged file is not written again.
func TestBoltPanicInCommitIsSticky(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	calls := 0
	g := stickyCommits(db, nil, func(batch []boltWrite) []error {
		calls++
		panic("page 7: invalid page type")
	})
	noop := func(*bolt.Tx) error { return nil }
	for i := range 2 {
		err := g.Do(noop)
		var ce *store.CorruptError
		if !errors.As(err, &ce) || ce.Path != path {
			t.Fatalf("commit %d: %v, want a *store.CorruptError for %s", i, err, path)
		}
	}
	if calls != 1 {
		t.Errorf("the commit ran %d times, want once: a store that panicked is not written again", calls)
	}
}

// TestBoltViewPanicIsCorrupt: a read that makes bbolt panic is a
// *store.CorruptError, not the end of the relay.
func TestBoltViewPanicIsCorrupt(t *testing.T) {
	s, err := OpenBolt(filepath.Join(t.TempDir(), "queue.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.view(func(*bolt.Tx) error { panic("unexpected fault address") })
	var ce *store.CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("view: %v, want a *store.CorruptError", err)
	}
}
