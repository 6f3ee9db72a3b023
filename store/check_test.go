package store_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/storetest"
)

// filled makes a bbolt file with a few buckets of a few hundred records.
func filled(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.db")
	db, err := store.Open(path, &store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for i := range 4 {
			b, err := tx.CreateBucket([]byte(fmt.Sprint("bucket", i)))
			if err != nil {
				return err
			}
			for j := range 400 {
				if err := b.Put([]byte(fmt.Sprint("key", j)), make([]byte, 100)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	return path
}

// TestCheckRefusesDamagedFiles: each way of damaging a file is a
// *CorruptError naming the file, never a panic, with Options.Check.
func TestCheckRefusesDamagedFiles(t *testing.T) {
	for _, d := range storetest.Damages {
		t.Run(d.Name, func(t *testing.T) {
			path := filled(t)
			if err := d.Do(path); err != nil {
				t.Fatal(err)
			}
			db, err := store.Open(path, &store.Options{Check: true})
			var ce *store.CorruptError
			if !errors.As(err, &ce) || ce.Path != path || len(ce.Problems) == 0 {
				if db != nil {
					db.Close()
				}
				t.Fatalf("Open with Check on a damaged file: %v, want a *CorruptError naming %s", err, path)
			}
			t.Log(err)
		})
	}
}

// TestCheckAcceptsSoundFile: a sound file opens with Check, and a second
// Open (the lock released) works too.
func TestCheckAcceptsSoundFile(t *testing.T) {
	path := filled(t)
	db, err := store.Open(path, &store.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = store.Open(path, &store.Options{Check: true})
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	db.Close()
}

// TestMetaFallback: one zeroed or flipped meta page is reported with the
// transaction bbolt falls back to; a sound file and one whose both pages
// are gone (bbolt refuses it itself) are not.
func TestMetaFallback(t *testing.T) {
	path := filled(t)
	if got := store.MetaFallback(path); got != "" {
		t.Fatalf("sound file: %q", got)
	}
	for page := range 2 {
		p := filled(t)
		if err := storetest.FlipMeta(p, page); err != nil {
			t.Fatal(err)
		}
		got := store.MetaFallback(p)
		if want := fmt.Sprintf("meta page %d of %s fails its checksum", page, p); len(got) < len(want) || got[:len(want)] != want {
			t.Errorf("meta page %d flipped: %q, want it to start %q", page, got, want)
		}
	}
	if err := storetest.FlipMeta(path, 0); err != nil {
		t.Fatal(err)
	}
	if err := storetest.FlipMeta(path, 1); err != nil {
		t.Fatal(err)
	}
	if got := store.MetaFallback(path); got != "" {
		t.Errorf("both pages flipped: %q, want \"\" (bbolt refuses the file)", got)
	}
	stale := filled(t)
	old, err := os.ReadFile(stale)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, stale)
	commit(t, stale)
	commit(t, stale)
	// The second meta page as it was three commits ago, sound but stale.
	size := os.Getpagesize()
	if err := storetest.WriteAt(stale, old[size:2*size], int64(size)); err != nil {
		t.Fatal(err)
	}
	if got := store.MetaFallback(stale); !strings.Contains(got, "not consecutive") {
		t.Errorf("a stale second meta page: %q, want it reported", got)
	}
}

// commit makes one write transaction on the file at path.
func commit(t *testing.T, path string) {
	t.Helper()
	db, err := store.Open(path, &store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte("commit"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// TestCheckAcceptsChurnedFile: a file bbolt wrote through many commits of
// puts and deletes (first keys of pages among them), nested and inline
// buckets and values that span overflow pages passes the check,
// branch keys included: the check refuses damage, never bbolt's own work.
func TestCheckAcceptsChurnedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "churned.db")
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 6 {
		db, err := store.Open(path, &store.Options{NoSync: true, Check: round > 0})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for range 40 {
			if err := db.Update(func(tx *bolt.Tx) error { return churn(tx, rng) }); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()
	}
}

// churn puts and deletes random keys in a few top-level buckets, each
// with a nested bucket and an inline one.
func churn(tx *bolt.Tx, rng *rand.Rand) error {
	for i := range 3 {
		b, err := tx.CreateBucketIfNotExists([]byte(fmt.Sprint("top", i)))
		if err != nil {
			return err
		}
		nb, err := b.CreateBucketIfNotExists([]byte("nested"))
		if err != nil {
			return err
		}
		tiny, err := b.CreateBucketIfNotExists([]byte("tiny")) // inline: one small key
		if err != nil {
			return err
		}
		if err := tiny.Put([]byte("k"), []byte(fmt.Sprint(rng.IntN(9)))); err != nil {
			return err
		}
		for range 60 {
			k := []byte(fmt.Sprintf("%0*d", 1+rng.IntN(12), rng.IntN(2000)))
			target := b
			if rng.IntN(4) == 0 {
				target = nb
			}
			switch rng.IntN(3) {
			case 0:
				if err := target.Delete(k); err != nil {
					return err
				}
			default:
				if err := target.Put(k, make([]byte, rng.IntN(200)+rng.IntN(2)*rng.IntN(9000))); err != nil {
					return err
				}
			}
		}
		if rng.IntN(5) == 0 { // empty the first page's keys
			c := b.Cursor()
			for k, v := c.First(); k != nil && rng.IntN(40) > 0; k, v = c.Next() {
				if v != nil {
					if err := c.Delete(); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}
