package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestOpenModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	db, err := Open(filepath.Join(dir, "agent.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fi, _ := os.Stat(filepath.Join(dir, "agent.db"))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode = %v, want 0600", fi.Mode().Perm())
	}
	di, _ := os.Stat(dir)
	if di.Mode().Perm() != 0o700 {
		t.Errorf("dir mode = %v, want 0700", di.Mode().Perm())
	}
}

func TestMaxSize(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "small.db"), &Options{MaxSize: 1 << 20, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var werr error
	for i := 0; i < 64 && werr == nil; i++ {
		werr = db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			return b.Put([]byte{byte(i)}, bytes.Repeat([]byte{1}, 64<<10))
		})
	}
	if !errors.Is(Err(werr), ErrFull) {
		t.Fatalf("writing 4 MiB into a 1 MiB store: err = %v, want ErrFull", werr)
	}
}
