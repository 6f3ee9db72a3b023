package queue

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// TestLogMemoryPerRecord: an open record log holds at most 64 bytes of
// heap per live record (the default engine's bound, docs/performance.md): the
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

// TestLogMemoryFollowsDrain: once a drain acknowledged most of an agent's
// records, its entries take an array the size of what is left, and none
// once it has nothing left; acknowledging many records at once removes
// exactly those.
func TestLogMemoryFollowsDrain(t *testing.T) {
	l := openLog(t, filepath.Join(t.TempDir(), "log"), nil)
	defer l.Close()
	b := queuebounds.Default()
	b.MaxMessages, b.MaxPerPeer = 1000, 1000
	var seqs []uint64
	for range 300 {
		seqs = append(seqs, mustEnqueue(t, l, msg(alice, "x"), b, t0).Seq)
	}
	acked := append(slices.Clone(seqs[:290]), seqs[295], seqs[3], 9999) // out of order, a repeat, an unknown seq
	if err := l.Ack(bgc, agent, acked); err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(seqs[290:295]), seqs[296:]...)
	if got := liveSeqs(t, l, agent, t0); !slices.Equal(got, want) {
		t.Errorf("live records %v, want %v", got, want)
	}
	a := l.index.agents[agent]
	if cap(a.live) > 4*len(a.live) {
		t.Errorf("%d live entries in an array of %d", len(a.live), cap(a.live))
	}
	checkLogIndex(t, l)
	if err := l.Ack(bgc, agent, want); err != nil {
		t.Fatal(err)
	}
	if a.live != nil {
		t.Errorf("an agent with no records keeps an array of %d entries", cap(a.live))
	}
}
