package queue

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// TestRemovedWhileOpen: the data directory is removed while the queue is
// open. Writes into the removed files would succeed at the system level
// and be gone at the next start, so every enqueue and acknowledgement from
// then on fails with a *store.RemovedError (the relay answers
// store_unavailable, queued: false), while the records acknowledged
// before can still be read and drained by their devices.
func TestRemovedWhileOpen(t *testing.T) {
	b := queuebounds.Default()
	for _, engine := range []string{"bolt", "log"} {
		t.Run(engine, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			var s Store
			if engine == "bolt" {
				bs, err := OpenBolt(filepath.Join(dir, "queue.db"), nil)
				if err != nil {
					t.Fatal(err)
				}
				s = bs
			} else {
				s = openLog(t, filepath.Join(dir, "queue.log"), nil)
			}
			defer s.Close()
			var before []uint64
			for range 3 {
				before = append(before, mustEnqueue(t, s, msg(alice, "kept"), b, t0).Seq)
			}
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				_, err := s.Enqueue(bgc, msg(alice, "into a removed file"), b, t0)
				if !errors.Is(err, store.ErrRemoved) {
					t.Fatalf("enqueue %d after the removal: %v, want store.ErrRemoved", i, err)
				}
			}
			if err := s.Ack(bgc, agent, before[:1]); !errors.Is(err, store.ErrRemoved) {
				t.Fatalf("ack after the removal: %v, want store.ErrRemoved", err)
			}
			rs, err := s.Next(bgc, agent, 0, 10, t0)
			if err != nil || len(rs) != len(before) {
				t.Fatalf("Next after the removal: %d records, %v; want the %d stored before", len(rs), err, len(before))
			}
		})
	}
}
