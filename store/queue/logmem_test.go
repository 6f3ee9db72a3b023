package queue

import (
	"path/filepath"
	"testing"
)

// TestLogMemoryPerRecord: an open record log holds at most 64 bytes of
// heap per live record (issue 25's bound for the default engine): the
// index keeps a fixed-size entry per record and each sender's name once.
func TestLogMemoryPerRecord(t *testing.T) {
	const records = 50_000
	dir := filepath.Join(t.TempDir(), "queue.log")
	writeLogFrames(t, dir, records, 16)
	perRecord := float64(indexHeap(t, dir)) / records
	t.Logf("%.1f heap bytes per live record", perRecord)
	if perRecord > 64 {
		t.Errorf("an open log of %d records holds %.1f heap bytes per record, want at most 64", records, perRecord)
	}
}
