//go:build !race

package drain_test

import (
	"context"
	"testing"
)

const raceEnabled = false

// TestNothingToDoOpensNoWriteTransaction: Recover with an empty outbox and
// Redecide with nothing held, which every wake runs, find so in a read
// transaction each (bbolt's count of started read transactions goes up by
// one) and open no write transaction: its page map and the freelist
// reloaded when it rolls back made each 14 and 15 allocations (amd64,
// go1.26), where the read transaction makes 7. Not built under -race,
// whose instrumentation allocates on its own.
func TestNothingToDoOpensNoWriteTransaction(t *testing.T) {
	h := newHarness(t, opts{})
	ctx := context.Background()
	for _, tt := range []struct {
		name      string
		run       func() error
		maxAllocs float64
	}{
		{"Recover", func() error { _, err := h.d.Recover(ctx); return err }, 10},
		{"Redecide", func() error { _, err := h.d.Redecide(ctx); return err }, 10},
	} {
		reads := h.db.Stats().TxN
		if err := tt.run(); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if n := h.db.Stats().TxN - reads; n != 1 {
			t.Errorf("%s with nothing to do started %d read transactions, want 1", tt.name, n)
		}
		if a := testing.AllocsPerRun(50, func() { tt.run() }); a > tt.maxAllocs {
			t.Errorf("%s with nothing to do: %.0f allocations, want at most %.0f (no write transaction)", tt.name, a, tt.maxAllocs)
		}
	}
}
