package server

import (
	"bytes"
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// BenchmarkDrain measures records per second drained over a loopback link
// from a real bbolt queue: pull in batches of 100, ack each batch (one
// fsync'd delete transaction per batch). Bodies are 1 KiB.
func BenchmarkDrain(b *testing.B) {
	h := newHarness(b)
	dev := didtest.Key(b, 1)
	c := h.dial(b, dev, nil)
	body := bytes.Repeat([]byte("x"), 1024)
	bounds := queuebounds.Default()
	bounds.MaxMessages, bounds.MaxBytes, bounds.MaxPeerBytes = 1<<30, 1<<40, 1<<40
	bounds.MaxPerPeer = 1 << 30
	b.StopTimer()
	// Fill the queue with concurrent (group-committed) enqueues; order
	// among them does not matter here.
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if _, err := h.q.Enqueue(context.Background(), queue.Record{Agent: dev.DID().String(), From: "did:key:zS", Body: body}, bounds, time.Now()); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StartTimer()
	meter := benchcpu.Start(b)
	start := time.Now()
	n, err := c.Drain(context.Background(), 100, func(context.Context, []wire.Record) error { return nil })
	elapsed := time.Since(start)
	meter.Stop()
	if err != nil || n != b.N {
		b.Fatalf("Drain = %d, %v; want %d", n, err, b.N)
	}
	b.ReportMetric(float64(n)/elapsed.Seconds(), "records/s")
}

// BenchmarkLiveRoundTrip measures the round trip of a live request: relay
// Forward → device handler → response, over loopback.
func BenchmarkLiveRoundTrip(b *testing.B) {
	h := newHarness(b)
	dev := didtest.Key(b, 1)
	h.dial(b, dev, func(ctx context.Context, req wire.Request) wire.Response {
		return wire.Response{Status: 200, ContentType: "application/json", Body: req.Body}
	})
	req := wire.Request{From: "did:key:zA", Version: "1.0", Body: bytes.Repeat([]byte("y"), 512)}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	meter := benchcpu.Start(b)
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := h.srv.Forward(context.Background(), dev.DID().String(), req); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	meter.Stop()
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
