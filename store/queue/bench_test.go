package queue

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/queue/recordlog"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
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

// fsyncFor runs one-key bbolt Update transactions (each one commit with
// fsync) on db for about d, at least 5, and returns how many and how long.
func fsyncFor(b *testing.B, db *bolt.DB, d time.Duration) (int, time.Duration) {
	start := time.Now()
	n := 0
	for ; time.Since(start) < d || n < 5; n++ {
		if err := fsyncOnce(db, n); err != nil {
			b.Fatal(err)
		}
	}
	return n, time.Since(start)
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

// pagesWritten returns how many page writes s's commits have issued and
// the time they spent writing and syncing.
func pagesWritten(s *Bolt) (int64, time.Duration) {
	st := s.db.Stats()
	return st.TxStats.GetWrite(), st.TxStats.GetWriteTime()
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
	meter := benchcpu.Start(b)
	for i := 0; b.Loop(); i++ {
		if err := fsyncOnce(db, i); err != nil {
			b.Fatal(err)
		}
	}
	meter.Stop()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fsyncs/s")
}

// BenchmarkEnqueueDurable measures durable (fsync'd) enqueue throughput
// with 1, 16 and 64 concurrent senders, each enqueueing 1 KiB bodies to
// one of 16 agents, on both engines: Bolt (engine=bolt) and the record log
// (engine=log), the two of one sender count run one after the other.
// Beside each, in the same directory, it measures the raw fsync rate
// (one-key bbolt transactions per second) and reports the ratio x-fsync =
// enqueues/s ÷ fsyncs/s: how far group commit carries the queue past one
// fsync per message. The disk is shared and its load drifts, so the run
// alternates: eight rounds of enqueues, each followed by 60 ms of one-key
// commits, and the two rates are summed over the rounds.
// enqueues/commit is the mean batch size and pages/commit the 4 KiB pages
// each commit writes (bbolt's TxStats; the log's bytes appended ÷ 4096);
// for bolt, µs-write/commit is the time a commit spends writing and
// syncing them.
func BenchmarkEnqueueDurable(b *testing.B) {
	for _, senders := range []int{1, 16, 64} {
		for _, engine := range []string{"bolt", "log"} {
			b.Run(fmt.Sprintf("senders=%d/engine=%s", senders, engine), func(b *testing.B) {
				benchEnqueueDurable(b, engine, senders)
			})
		}
	}
}

func benchEnqueueDurable(b *testing.B, engine string, senders int) {
	dir := benchDir(b)
	probe, err := store.Open(filepath.Join(dir, "fsync-probe.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer probe.Close()
	s, commits, err := openEngine(dir, engine)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c0 := commits()
	var fsyncs int
	var fsyncTime time.Duration
	b.ResetTimer()
	meter := benchcpu.Start(b)
	const rounds = 8
	for r := range rounds {
		if err := enqueueRound(s, senders, b.N*(r+1)/rounds-b.N*r/rounds); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		meter.Pause()
		n, d := fsyncFor(b, probe, 60*time.Millisecond)
		fsyncs, fsyncTime = fsyncs+n, fsyncTime+d
		meter.Resume()
		b.StartTimer()
	}
	b.StopTimer()
	meter.Stop()
	rate, fsyncRate := float64(b.N)/b.Elapsed().Seconds(), float64(fsyncs)/fsyncTime.Seconds()
	b.ReportMetric(rate, "enqueues/s")
	b.ReportMetric(fsyncRate, "fsyncs/s")
	b.ReportMetric(rate/fsyncRate, "x-fsync")
	c := commits().sub(c0)
	b.ReportMetric(float64(b.N)/c.n, "enqueues/commit")
	b.ReportMetric(c.pages/c.n, "pages/commit")
	if c.write > 0 {
		b.ReportMetric(float64(c.write)/c.n/1e3, "µs-write/commit")
	}
}

// commitStats are an engine's commits so far, the pages they wrote and
// (bolt) the time spent writing and syncing them.
type commitStats struct {
	n, pages float64
	write    time.Duration
}

func (c commitStats) sub(d commitStats) commitStats {
	return commitStats{c.n - d.n, c.pages - d.pages, c.write - d.write}
}

// openEngine opens a queue of engine in dir and returns a function that
// reads its commit statistics.
func openEngine(dir, engine string) (Store, func() commitStats, error) {
	if engine == "log" {
		l, err := OpenLog(filepath.Join(dir, "queue.log"), nil)
		if err != nil {
			return nil, nil, err
		}
		return l, func() commitStats {
			l.mu.RLock()
			defer l.mu.RUnlock()
			return commitStats{n: float64(l.nCommits), pages: float64(l.nBytes) / 4096}
		}, nil
	}
	s, err := OpenBolt(filepath.Join(dir, "queue.db"), nil)
	if err != nil {
		return nil, nil, err
	}
	return s, func() commitStats {
		var id int
		s.db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil })
		w, wt := pagesWritten(s)
		return commitStats{n: float64(id), pages: float64(w), write: wt}
	}, nil
}

// enqueueRound enqueues n 1 KiB records from senders concurrent senders,
// sender i to agent i mod 16, with bounds that never refuse.
func enqueueRound(s Store, senders, n int) error {
	bounds := queuebounds.Default()
	bounds.MaxMessages, bounds.MaxPerPeer, bounds.MaxBytes, bounds.MaxPeerBytes = 1<<30, 1<<30, 1<<50, 1<<50
	body := bytes.Repeat([]byte("x"), 1024)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() {
			r := Record{Agent: fmt.Sprint("did:key:agent", i%16), From: fmt.Sprint("did:key:sender", i), Body: body}
			for next.Add(1) <= int64(n) {
				if _, err := s.Enqueue(bg, r, bounds, t0); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	return nil
}

// BenchmarkLogOpen measures the record log's recovery: OpenLog checks
// every segment's frames and rebuilds the index, from the index
// checkpoint (checkpoint=true: the one Close wrote, so that no frame is
// decoded) or from the frames (checkpoint=false). The log holds 100,000 or
// 1,000,000 live 1 KiB records of 1,000 agents, written as frames into
// 64 MiB segments beforehand, in commits of 64 records; it reports the
// time per open (ns/op, Close not counted) and the records and MiB it
// reads per second, and the heap the open Log holds per live record
// (heap-B/record).
func BenchmarkLogOpen(b *testing.B) {
	for _, records := range []int{100_000, 1_000_000} {
		dir := filepath.Join(benchDir(b), "queue.log")
		total := writeLogFrames(b, dir, records, 1024)
		for _, ck := range []bool{false, true} {
			b.Run(fmt.Sprintf("records=%d/checkpoint=%v", records, ck), func(b *testing.B) {
				benchLogOpen(b, dir, records, total, ck)
			})
		}
		os.RemoveAll(dir)
	}
}

func benchLogOpen(b *testing.B, dir string, records int, total int64, ck bool) {
	os.Remove(filepath.Join(dir, checkpointFile))
	heap := indexHeap(b, dir) // its Close writes the checkpoint
	meter := benchcpu.Start(b)
	for b.Loop() {
		if !ck {
			os.Remove(filepath.Join(dir, checkpointFile))
		}
		l, err := OpenLog(dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		if used := l.CheckpointIgnored() == nil && l.ckFresh; used != ck {
			b.Fatalf("checkpoint used: %v", used)
		}
		b.StopTimer()
		meter.Pause()
		l.Close()
		meter.Resume()
		b.StartTimer()
	}
	meter.Stop()
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(records)/sec, "records/s")
	b.ReportMetric(float64(total)/(1<<20)/sec, "MiB/s")
	b.ReportMetric(float64(heap)/float64(records), "heap-B/record")
}

// writeLogFrames writes into dir a record log of n live records with
// bodies of size bytes, for 1,000 agents from 50 senders, as frames in
// 64 MiB segments, in commits of 64 records, and returns the bytes of
// frames written.
func writeLogFrames(b testing.TB, dir string, n, size int) int64 {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	body := bytes.Repeat([]byte("x"), size)
	var buf []byte
	id, total, start := uint64(1), int64(0), 0
	flush := func() {
		if start < len(buf) {
			buf = recordlog.AppendCommit(buf, start)
		}
		if err := os.WriteFile(filepath.Join(dir, recordlog.Name(id)), append(bytes.Clone(recordlog.Magic), buf...), 0o600); err != nil {
			b.Fatal(err)
		}
		total += int64(len(buf))
		buf, id, start = buf[:0], id+1, 0
	}
	for i := range n {
		r := Record{Agent: fmt.Sprint("did:key:agent", i%1000), Seq: uint64(i/1000 + 1), From: fmt.Sprint("did:key:sender", i%50),
			EnqueuedAt: t0, ExpiresAt: t0.Add(time.Hour), Body: body}
		if buf = appendRecordFrame(buf, r); i%64 == 63 { // commits of 64 records
			buf = recordlog.AppendCommit(buf, start)
			start = len(buf)
		}
		if len(buf) >= defaultSegmentSize {
			flush()
		}
	}
	flush()
	return total
}

// indexHeap returns the heap bytes a Log opened over dir holds.
func indexHeap(b testing.TB, dir string) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l, err := OpenLog(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(l)
	l.Close()
	return after.HeapAlloc - before.HeapAlloc
}
