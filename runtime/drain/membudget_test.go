package drain_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
)

// Memory budget of a drain. A device with 64 MB of RAM drains a
// queue of any length in bounded memory: one batch (BatchSize records) is
// in memory at a time, and nothing a batch leaves behind grows with the
// queue. batchBudget is what a batch of 64 one-kilobyte objects may hold
// live: the records, their parsed objects, the outbox entries and the
// deliveries in hand-off. retainedBudget allows for caches that fill once
// (encoders, pooled regexp state) and bbolt's page bookkeeping, which
// grows with the file, not with what the drain keeps. Measured (amd64,
// go1.26, 4096 records): 0.9 MiB live above the baseline at the peak
// hand-off, 0.05 MiB after the drain (0.02 MiB after 1024 records).
const (
	batchBudget    = 4 << 20   // live heap above the baseline while a batch is handed off
	retainedBudget = 256 << 10 // live heap above the baseline once every batch drained
)

// liveHeap returns the live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestDrainMemoryBudget drains N records in batches of 64 through the real
// pipeline (checks, replay cache, outbox, bbolt) and measures the live
// heap at every batch's first hand-off (when the batch's deliveries are in
// memory) and after the drain.
func TestDrainMemoryBudget(t *testing.T) {
	n := 4096
	if testing.Short() || raceEnabled {
		n = 1024
	}
	const batch = 64
	h := newHarness(t, opts{plaintext: true})
	var peak uint64
	measured := 0
	h.rec.OnDeliver(func(d deliver.Delivery) {
		if (d.Seq-1)%batch == 0 { // the batch's first hand-off
			peak = max(peak, liveHeap())
			measured++
		}
	})
	h.rec.Discard()
	payload := map[string]any{"text": strings.Repeat("x", 1024)}
	run := func(from, to int) {
		recs := make([]drain.Record, 0, batch)
		for seq := from; seq < to; seq++ {
			obj := runtimetest.Object(t, h.alice, "comms:message", t0, time.Hour, payload)
			recs = append(recs, drain.Record{Seq: uint64(seq), From: h.alice.DID().String(), Body: runtimetest.Body(t, runtimetest.DataPart(t, obj))})
			if len(recs) == batch {
				rep, err := h.d.Batch(context.Background(), recs, h.ack)
				if err != nil || rep.Delivered != batch {
					t.Fatalf("batch ending at %d: %v, %v", seq, rep, err)
				}
				recs = recs[:0]
			}
		}
	}
	run(1, batch+1) // warm up: buckets, pools, the first pages
	h.acked, peak, measured = nil, 0, 0
	base := liveHeap()
	run(batch+1, n+1)
	h.acked = nil
	retained := liveHeap()
	if measured != n/batch-1 {
		t.Fatalf("measured %d batches, want %d", measured, n/batch-1)
	}
	t.Logf("%d records: live heap %s at the baseline, %s at the peak hand-off, %s after the drain",
		n, mib(base), mib(peak), mib(retained))
	if peak > base+batchBudget {
		t.Errorf("a batch of %d held %s live above the baseline, budget %s", batch, mib(peak-base), mib(batchBudget))
	}
	if retained > base+retainedBudget {
		t.Errorf("draining %d records left %s live above the baseline, budget %s: something grows with the queue",
			n, mib(retained-base), mib(retainedBudget))
	}
}

func mib(b uint64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }
