//go:build !race

package sessions_test

import "testing"

// Allocation bounds per drained record (4 KiB objects in MLS, batches of
// 64; BenchmarkDrainMLS measures the same): what the drain allocates per
// record sets how often the collector runs and how high the heap climbs
// between collections, the anonymous part of the drain's peak
// (docs/footprint.md). Measured by the test below (amd64, go1.26): 93 KiB
// and 637 allocations per record, from 186 KiB and 808 before the
// canonical form, the message's parts, the MLS wire part, the decrypted
// application data and the members' leaves stopped being copied. The
// bounds leave about a fifth for the toolchain and bbolt's page splits.
const (
	maxBytesPerRecord  = 112 << 10
	maxAllocsPerRecord = 760
)

// TestDrainAllocsPerRecord drains 128 MLS-encrypted 4 KiB Governed Objects
// (after a batch that warms buckets and pools up) and fails if the drain
// allocates more per record than the bounds above: counts of the
// allocator, not timing. It is not built under -race, whose
// instrumentation allocates on its own.
func TestDrainAllocsPerRecord(t *testing.T) {
	m := newMLSDrain(t)
	m.drain(t, m.records(t, drainBatch))
	allocs, bytes := perRecordAlloc(t, m, 2*drainBatch)
	t.Logf("per record: %.0f allocations, %.1f KiB", allocs, bytes/1024)
	if bytes > maxBytesPerRecord {
		t.Errorf("the drain allocated %.1f KiB per record, bound %d KiB", bytes/1024, maxBytesPerRecord>>10)
	}
	if allocs > maxAllocsPerRecord {
		t.Errorf("the drain made %.0f allocations per record, bound %d", allocs, maxAllocsPerRecord)
	}
}
