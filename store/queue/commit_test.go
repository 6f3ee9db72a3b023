package queue

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store"
)

// TestCommitterBatches holds a first commit open until 20 writers wait,
// then checks that they share one commit, that the writers whose function
// fails or panics get an error and write nothing, and the rest are
// committed.
func TestCommitterBatches(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "c.db"), &store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := newBoltCommits(db, nil)
	release := make(chan struct{})
	put := func(i int) func(*bolt.Tx) error {
		return func(tx *bolt.Tx) error {
			switch i {
			case 7:
				return errors.New("seven fails")
			case 11:
				panic("eleven panics")
			}
			b, err := tx.CreateBucketIfNotExists([]byte("k"))
			if err != nil {
				return err
			}
			return b.Put([]byte(fmt.Sprint(i)), nil)
		}
	}
	first, held := make(chan error), make(chan struct{})
	go func() { first <- c.Do(func(tx *bolt.Tx) error { close(held); <-release; return nil }) }()
	<-held
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = c.Do(put(i)) })
	}
	for waiting := 0; waiting < n; {
		waiting = c.Waiting()
	}
	tx0 := txID(t, db)
	close(release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// Rolled back transactions (the batches with seven or eleven, each of
	// them alone) do not count: the held commit and the batch without them.
	if got := txID(t, db) - tx0; got != 2 {
		t.Errorf("%d commits, want 2 (the held one and one batch)", got)
	}
	db.View(func(tx *bolt.Tx) error {
		for i := range n {
			fails := i == 7 || i == 11
			if ok := tx.Bucket([]byte("k")).Get([]byte(fmt.Sprint(i))) != nil; ok == fails || (errs[i] != nil) != fails {
				t.Errorf("writer %d: stored %v, err %v", i, ok, errs[i])
			}
		}
		return nil
	})
}

func txID(t *testing.T, db *bolt.DB) int {
	var id int
	if err := db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}
