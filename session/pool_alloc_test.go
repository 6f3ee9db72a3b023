//go:build !race

package session

import (
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// maxRefillAllocsPerKeyPackage bounds the allocations of a refill that
// finds a full pool, per KeyPackage in it: it decodes each entry once, 5
// allocations each in a read transaction and 7 in a write one (amd64,
// go1.26), where a prune followed by a second pass for the unpublished
// ones decoded each twice (9 and 11).
const maxRefillAllocsPerKeyPackage = 8

// TestAFullPoolIsDecodedOnce counts the allocations of RefillChanged on a
// full pool of 20, in a read transaction as the agent's empty wake runs
// it (runtime/sessions), and in a write transaction rolled back. Not built
// under -race, whose instrumentation allocates on its own.
func TestAFullPoolIsDecodedOnce(t *testing.T) {
	a := newAgent(t, "bob", nil)
	const n = 20
	a.update(func(tx *bolt.Tx) error { _, err := a.s.Refill(tx, n); return err })
	errRollback := errors.New("roll back")
	for _, tt := range []struct {
		name string
		tx   func(func(*bolt.Tx) error) error
	}{{"read", a.db.View}, {"write", a.db.Update}} {
		var kps [][]byte
		var err error
		refill := func(tx *bolt.Tx) error {
			kps, _, err = a.s.RefillChanged(t.Context(), tx, n)
			return errRollback
		}
		base := testing.AllocsPerRun(20, func() { tt.tx(func(*bolt.Tx) error { return errRollback }) })
		allocs := testing.AllocsPerRun(20, func() { tt.tx(refill) })
		if tt.tx(refill); err != nil || len(kps) != n {
			t.Fatalf("RefillChanged in a %s transaction: %d KeyPackages, %v; want %d", tt.name, len(kps), err, n)
		}
		per := (allocs - base) / n
		t.Logf("%s transaction: %.1f allocations per KeyPackage", tt.name, per)
		if per > maxRefillAllocsPerKeyPackage {
			t.Errorf("RefillChanged of a full pool in a %s transaction: %.1f allocations per KeyPackage, want at most %d (each entry decoded once)",
				tt.name, per, maxRefillAllocsPerKeyPackage)
		}
	}
}
