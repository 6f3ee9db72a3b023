//go:build !race

// The allocation counts below hold without the race detector only: under
// -race, sync.Pool drops what is put in it at random.

package groupcommit

import "testing"

// TestDoAllocations counts what a lone Do allocates. A batch costs four
// allocations, which the calls of a batch of many share: its slice of
// calls (pending), the values handed to Commit, and the hand-off function
// with its flag. The call itself (its struct and its channel) is reused
// from one Do to the next, so it allocates nothing more (it took 7).
func TestDoAllocations(t *testing.T) {
	g := &Group[int]{Commit: func([]int, func()) []error { return nil }}
	g.Do(0) // the first call's struct and channel
	if n := testing.AllocsPerRun(100, func() { g.Do(1) }); n > 4 {
		t.Errorf("a lone Do allocates %v times, want at most 4 (the batch's own)", n)
	}
}
