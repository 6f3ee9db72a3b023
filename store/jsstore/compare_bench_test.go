package jsstore_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// BenchmarkEnqueueDurableVsJetStream runs store/queue's
// BenchmarkEnqueueDurable workload (1 KiB records, 1, 16 and 64
// concurrent senders, 16 agents, each enqueue durable before it returns)
// side by side in one run on the same file system ($TORPOR_BENCH_DIR, or
// the temporary directory):
//
//   - bbolt: queue.Bolt, fsync on every commit;
//   - jetstream-store: jsstore.Queue, the relay's JetStream store, on an
//     embedded nats-server with file storage and sync_interval always
//     (one replica, fsync before every acknowledgement);
//   - jetstream-publish: the same server's raw publish of the 1 KiB body to
//     a file stream, each publisher waiting for its acknowledgement (the
//     engine's floor for one durable write).
//
// The JetStream sub-benchmarks report bbolt's rate over theirs as
// "x-bbolt/js" (the goal in docs/performance.md: at least 5); scripts/bench.sh prints
// them. Run them with the bbolt one (-bench EnqueueDurableVsJetStream):
// the ratio uses its rate. Nothing asserts a timing.
func BenchmarkEnqueueDurableVsJetStream(b *testing.B) {
	dir := compareDir(b)
	srv, err := jsserver.Start(dir, jsserver.Options{SyncAlways: true})
	if err != nil {
		b.Fatal(err)
	}
	defer jsserver.Shutdown([]*jsserver.Server{srv})
	c, err := jsstore.Open(context.Background(), jsstore.Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	js := rawStream(b, srv.URL())
	body := bytes.Repeat([]byte("x"), 1024)
	for _, senders := range []int{1, 16, 64} {
		var bolt float64
		b.Run(fmt.Sprintf("senders=%d/bbolt", senders), func(b *testing.B) {
			s, err := queue.OpenBolt(filepath.Join(b.TempDir(), "queue.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			bolt = runEnqueues(b, s, senders, body)
		})
		ratio := func(b *testing.B, rate float64) {
			if bolt > 0 {
				b.ReportMetric(bolt/rate, "x-bbolt/js")
			}
		}
		b.Run(fmt.Sprintf("senders=%d/jetstream-store", senders), func(b *testing.B) {
			ratio(b, runEnqueues(b, c.Queue(), senders, body))
		})
		b.Run(fmt.Sprintf("senders=%d/jetstream-publish", senders), func(b *testing.B) {
			ratio(b, runSenders(b, senders, func(i int) error {
				_, err := js.Publish(context.Background(), fmt.Sprint("compare.raw.", i%16), body)
				return err
			}))
		})
	}
}

// compareDir is a directory on the file system the comparison runs on.
func compareDir(b *testing.B) string {
	if d := os.Getenv("TORPOR_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "jsstore-compare-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

// rawStream connects to url and creates a one-replica file stream for
// subjects compare.raw.>.
func rawStream(b *testing.B, url string) jetstream.JetStream {
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	cfg := jetstream.StreamConfig{Name: "COMPARE_RAW", Subjects: []string{"compare.raw.>"}, Replicas: 1, Storage: jetstream.FileStorage}
	if _, err := js.CreateOrUpdateStream(context.Background(), cfg); err != nil {
		b.Fatal(err)
	}
	return js
}

// runEnqueues enqueues b.N records into s from senders goroutines, sender
// i for agent i%16 (store/queue's BenchmarkEnqueueDurable), and returns
// enqueues/s.
func runEnqueues(b *testing.B, s queue.Store, senders int, body []byte) float64 {
	bounds := workloadBounds()
	t0 := time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)
	return runSenders(b, senders, func(i int) error {
		r := queue.Record{Agent: fmt.Sprint("did:key:agent", i%16), From: fmt.Sprint("did:key:sender", i), Body: body}
		_, err := s.Enqueue(context.Background(), r, bounds, t0)
		return err
	})
}

// workloadBounds are bounds that never refuse the workload's records: every
// cap raised, the per-sender byte cap (MaxPeerBytes) among them. Without
// it, DefaultBounds' 512 KiB per sender refused the 513th 1 KiB record of
// a sender with "queue: full (peer)" once b.N grew past 512 × senders
// (TestWorkloadBoundsAdmitALongRun).
func workloadBounds() queuebounds.Bounds {
	b := queuebounds.Default()
	b.MaxMessages, b.MaxPerPeer, b.MaxBytes, b.MaxPeerBytes = 1<<30, 1<<30, 1<<50, 1<<50
	return b
}

// TestWorkloadBoundsAdmitALongRun: the benchmark's bounds admit a record
// after more records from one sender to one agent than any run reaches
// (b.N of a one-second run is in the thousands), as every engine checks
// them (queue.Admit).
func TestWorkloadBoundsAdmitALongRun(t *testing.T) {
	const n = 1 << 24
	live := queue.Stats{Messages: n, Bytes: n * 1024}
	r := queue.Record{Agent: "did:key:agent0", From: "did:key:sender0", Body: bytes.Repeat([]byte("x"), 1024)}
	if err := queue.Admit(live, live, r, workloadBounds()); err != nil {
		t.Fatalf("after %d records of 1 KiB from one sender: %v", n, err)
	}
}

// runSenders calls do from senders goroutines (i is the goroutine) until
// b.N calls were made, and reports and returns calls/s.
func runSenders(b *testing.B, senders int, do func(i int) error) float64 {
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	b.ResetTimer()
	meter := benchcpu.Start(b) // the embedded server's CPU among it
	for i := range senders {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := do(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	meter.Stop()
	if first != nil {
		b.Fatal(first)
	}
	rate := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "enqueues/s")
	return rate
}
