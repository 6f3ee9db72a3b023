package sessions_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
)

// drainBatch is the agent's batch size (runtime.Store.BatchSize's default).
const drainBatch = 64

// mlsDrain is a device joined to a pair session from alice, and records
// alice sealed for it: 4 KiB Governed Objects, each in an MLS
// PrivateMessage, as the agent's drain takes them from the relay.
type mlsDrain struct {
	dev   *runtimetest.Device
	alice *sender
	group []byte
	seq   uint64
}

func newMLSDrain(t testing.TB) *mlsDrain {
	t.Helper()
	clk := clocktest.New(t0)
	bobKey, aliceKey := runtimetest.Key(t, 2), runtimetest.Key(t, 1)
	m := &mlsDrain{dev: newDevice(t, bobKey, clk), alice: newSender(t, aliceKey, clk)}
	m.dev.Rec.Discard()
	var kps [][]byte
	if err := m.dev.DB.Update(func(tx *bolt.Tx) (err error) { kps, err = m.dev.S.Refill(tx, 0); return err }); err != nil {
		t.Fatal(err)
	}
	var hs []drain.Record
	m.group, hs = m.alice.establishRecord(t, kps[0], bobKey.DID(), m.next())
	if rep, err := m.dev.Pipe.Batch(context.Background(), hs, nil); err != nil || rep.Handshake != 1 {
		t.Fatalf("the Welcome: %v, %v", rep, err)
	}
	return m
}

func (s *sender) establishRecord(t testing.TB, kp []byte, to did.DID, seq uint64) ([]byte, []drain.Record) {
	group, part := s.establish(t, kp, to)
	return group, []drain.Record{record(t, seq, s.key.DID(), part)}
}

func (m *mlsDrain) next() uint64 { m.seq++; return m.seq }

// records seals n objects of 4 KiB from alice.
func (m *mlsDrain) records(t testing.TB, n int) []drain.Record {
	t.Helper()
	payload := map[string]any{"text": strings.Repeat("x", 4<<10)}
	recs := make([]drain.Record, n)
	for i := range recs {
		obj := runtimetest.Object(t, m.alice.key, "comms:message", t0, time.Hour, payload)
		recs[i] = record(t, m.next(), m.alice.key.DID(), m.alice.seal(t, m.group, obj))
	}
	return recs
}

// drain drains recs in batches of drainBatch, every record delivered.
func (m *mlsDrain) drain(t testing.TB, recs []drain.Record) {
	for len(recs) > 0 {
		n := min(len(recs), drainBatch)
		rep, err := m.dev.Pipe.Batch(context.Background(), recs[:n], nil)
		if err != nil || rep.Delivered != n {
			t.Fatalf("batch of %d: %v, %v", n, rep, err)
		}
		recs = recs[n:]
	}
}

// BenchmarkDrainMLS drains MLS-encrypted 4 KiB Governed Objects through
// the agent's real pipeline (MLS sessions, the six checks, replay cache,
// ledger, outbox, delivery) into a bbolt file without fsync, in batches
// of 64; one operation is one record. Sealing the records is set-up.
// B/op and allocs/op are what the drain allocates per record, the figure
// behind the drain's memory peak (docs/footprint.md).
func BenchmarkDrainMLS(b *testing.B) {
	m := newMLSDrain(b)
	m.drain(b, m.records(b, drainBatch)) // warm up: buckets, pools, the first pages
	recs := m.records(b, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	meter := benchcpu.Start(b)
	m.drain(b, recs)
	meter.Stop()
}

// perRecordAlloc drains n records and returns the allocations and bytes
// allocated per record.
func perRecordAlloc(t testing.TB, m *mlsDrain, n int) (allocs, bytes float64) {
	recs := m.records(t, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m.drain(t, recs)
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(n), float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
}
