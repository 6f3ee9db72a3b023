package store_test

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store"
)

// TestUint: PutUint's value reads back; an absent key, or one holding
// other than 8 bytes, reads as 0.
func TestUint(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "u.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		if err := store.PutUint(b, []byte("n"), 1<<40+7); err != nil {
			return err
		}
		if err := b.Put([]byte("short"), []byte{1, 2, 3}); err != nil {
			return err
		}
		tests := []struct {
			key  string
			want uint64
		}{{"n", 1<<40 + 7}, {"absent", 0}, {"short", 0}}
		for _, tt := range tests {
			if got := store.Uint(b, []byte(tt.key)); got != tt.want {
				t.Errorf("Uint(%q) = %d, want %d", tt.key, got, tt.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
