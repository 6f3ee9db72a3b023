package queue

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store"
)

// benchDir returns the directory the benchmarks write to: $TORPOR_BENCH_DIR
// (to measure a particular disk, e.g. an SD card) or a temporary one.
func benchDir(b *testing.B) string {
	if d := os.Getenv("TORPOR_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "queue-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

// fsyncRate measures the raw rate of one-key bbolt Update transactions
// (each one commit with fsync) in dir, over about d.
func fsyncRate(b *testing.B, dir string, d time.Duration) float64 {
	db, err := store.Open(filepath.Join(dir, "fsync-probe.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	n := 0
	for ; time.Since(start) < d || n < 20; n++ {
		if err := fsyncOnce(db, n); err != nil {
			b.Fatal(err)
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

func fsyncOnce(db *bolt.DB, i int) error {
	return db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists([]byte("k"))
		if err != nil {
			return err
		}
		return bk.Put([]byte("key"), []byte(fmt.Sprint(i)))
	})
}

// lastTxID returns the id of the last committed write transaction.
func lastTxID(b *testing.B, s *Bolt) int {
	var id int
	if err := s.db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		b.Fatal(err)
	}
	return id
}

// BenchmarkFsync is the disk's raw durable commit rate: one-key bbolt
// Update transactions, each fsync'd (metric fsyncs/s).
func BenchmarkFsync(b *testing.B) {
	db, err := store.Open(filepath.Join(benchDir(b), "fsync.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := fsyncOnce(db, i); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fsyncs/s")
}

// BenchmarkEnqueueDurable measures durable (fsync'd) enqueue throughput
// with 1, 16 and 64 concurrent senders, each enqueueing 1 KiB bodies to
// one of 16 agents. Next to it, in the same run and directory, it measures
// the raw fsync rate (one-key transactions per second) and reports the
// ratio x-fsync = enqueues/s ÷ fsyncs/s: how far group commit carries the
// queue past one fsync per message. enqueues/commit is the mean batch size.
func BenchmarkEnqueueDurable(b *testing.B) {
	for _, senders := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("senders=%d", senders), func(b *testing.B) {
			dir := benchDir(b)
			// The disk's rate is measured right before and right after the
			// run and averaged, so that both sides see the same load.
			fsyncs := fsyncRate(b, dir, 250*time.Millisecond)
			s, err := OpenBolt(filepath.Join(dir, "queue.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			bounds := DefaultBounds()
			bounds.MaxMessages, bounds.MaxPerPeer, bounds.MaxBytes, bounds.MaxPeerBytes = 1<<30, 1<<30, 1<<50, 0
			body := bytes.Repeat([]byte("x"), 1024)
			var next atomic.Int64
			var failed atomic.Value
			tx0 := lastTxID(b, s)
			b.ResetTimer()
			var wg sync.WaitGroup
			for i := range senders {
				wg.Go(func() {
					r := Record{Agent: fmt.Sprint("did:key:agent", i%16), From: fmt.Sprint("did:key:sender", i), Body: body}
					for next.Add(1) <= int64(b.N) {
						if _, err := s.Enqueue(bg, r, bounds, t0); err != nil {
							failed.Store(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			if err := failed.Load(); err != nil {
				b.Fatal(err)
			}
			fsyncs = (fsyncs + fsyncRate(b, dir, 250*time.Millisecond)) / 2
			rate := float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "enqueues/s")
			b.ReportMetric(fsyncs, "fsyncs/s")
			b.ReportMetric(rate/fsyncs, "x-fsync")
			b.ReportMetric(float64(b.N)/float64(lastTxID(b, s)-tx0), "enqueues/commit")
		})
	}
}
