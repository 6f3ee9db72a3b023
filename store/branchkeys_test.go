package store

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store/storetest"
)

// TestBranchKeysReadAlike: the page walk finds the same problem whether
// it maps the file (unix) or reads each page (elsewhere), and none in
// the file before the damage.
func TestBranchKeysReadAlike(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		for i := range 500 {
			if err == nil {
				err = b.Put(fmt.Appendf(nil, "key%04d", i), make([]byte, 90))
			}
		}
		return err
	})
	var txid uint64
	db.View(func(tx *bolt.Tx) error { txid = uint64(tx.ID()); return nil })
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, mapped := range []bool{true, false} {
		if got := branchKeys(path, txid, mapped); len(got) != 0 {
			t.Fatalf("sound file, mapped %v: %q", mapped, got)
		}
	}
	if err := storetest.RaiseFirstKey(path); err != nil {
		t.Fatal(err)
	}
	mapped, read := branchKeys(path, txid, true), branchKeys(path, txid, false)
	if len(mapped) != 1 || !strings.Contains(mapped[0], "but the first key of its child page") || !slices.Equal(mapped, read) {
		t.Fatalf("damaged file: mapped %q, read %q; want the same one problem", mapped, read)
	}
}
