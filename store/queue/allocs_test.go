//go:build !race

// The allocation counts below hold without the race detector only: under
// -race, sync.Pool drops what is put in it at random.

package queue

import (
	"path/filepath"
	"testing"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// TestLogEnqueueAllocations counts what one Enqueue on the record log
// allocates, alone, for an agent that has records already: at most 11, all
// of them its commit's, which the Enqueues of one batch share (the group
// commit's batch, the commit's state, channel and finishing function, the
// errors, the two checks that the segment is still linked), and the
// index's entries, whose array grows by doubling. The Enqueue's own part
// of the commit (its record, what the commit found and the function that
// runs in it) is reused from one Enqueue to the next: it took 4 more.
func TestLogEnqueueAllocations(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "log"), nil)
	defer l.Close()
	b := queuebounds.Default()
	b.MaxMessages, b.MaxPerPeer = 1<<20, 1<<20
	r := msg(alice, "x")
	mustEnqueue(t, l, r, b, t0)
	n := testing.AllocsPerRun(200, func() { mustEnqueue(t, l, r, b, t0) })
	t.Logf("%.1f allocations per Enqueue", n)
	if n > 11 {
		t.Errorf("Enqueue allocates %.1f times, want at most 11", n)
	}
}
