package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/torpor-dev/torpor/store/queue"
)

// watchedQueue is the relay's queue store as every part of the relay uses
// it: it turns damage the store reports into log lines and metrics
// instead of silence (docs/relay.md, "Faults"):
//
//	torpor_relay_queue_damaged_records_total        records withheld because they
//	                                                fail their checksum (each once)
//	torpor_relay_queue_acks_deleted_nothing_total{still_served}
//	                                                acknowledged records the store did
//	                                                not delete
//
// A damaged record (a *queue.DamagedError from Next) is never served: it
// is logged once at error level, counted, and listed to the operator
// (torporctl queue list). An acknowledgement of records that deletes
// some of them not (queue.AckCounter) is logged and counted; when the
// store still serves them, its file is damaged, and Ack fails, so that
// the device's drain stops instead of receiving the same records again
// and again.
type watchedQueue struct {
	queue.Store
	log *slog.Logger
	clk interface{ Now() time.Time }
	// removing runs each acknowledgement, for a tenant's byte-hours
	// (Relay.tenantRemove).
	removing func(ctx context.Context, agent string, remove func() error) error

	damagedTotal prometheus.Counter
	ackNothing   *prometheus.CounterVec

	mu sync.Mutex
	// seen holds the damaged records already logged and counted, up to
	// maxSeenDamaged of them.
	seen map[damagedKey]bool
}

type damagedKey struct {
	agent string
	seq   uint64
}

// maxSeenDamaged bounds watchedQueue.seen; beyond it a damaged record is
// logged and counted again each time it is read.
const maxSeenDamaged = 100_000

// errAckDeletedNothing is Ack's error when the store still serves records
// an acknowledgement did not delete.
var errAckDeletedNothing = errors.New("relay: the queue store did not delete acknowledged records it still serves; its file is damaged")

func (s *Relay) watchQueue(q queue.Store) *watchedQueue {
	w := &watchedQueue{
		Store: q, log: s.log, clk: s.clk, seen: map[damagedKey]bool{}, removing: s.tenantRemove,
		damagedTotal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "torpor_relay_queue_damaged_records_total",
			Help: "Queued records withheld from devices because they fail their checksum (each counted once).",
		}),
		ackNothing: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "torpor_relay_queue_acks_deleted_nothing_total",
			Help: "Acknowledged records the queue store did not delete; still_served=true means a damaged store.",
		}, []string{"still_served"}),
	}
	s.metrics.reg.MustRegister(w.damagedTotal, w.ackNothing)
	return w
}

// Next implements queue.Store: damaged records are left out, logged and
// counted.
func (w *watchedQueue) Next(ctx context.Context, agent string, after uint64, max int, now time.Time) ([]queue.Record, error) {
	recs, _, err := w.next(ctx, agent, after, max, now)
	return recs, err
}

// next is Next that also returns the damaged records' seqs.
func (w *watchedQueue) next(ctx context.Context, agent string, after uint64, max int, now time.Time) ([]queue.Record, []uint64, error) {
	recs, err := w.Store.Next(ctx, agent, after, max, now)
	var de *queue.DamagedError
	if !errors.As(err, &de) {
		return recs, nil, err
	}
	var fresh []uint64
	w.mu.Lock()
	for _, seq := range de.Seqs {
		k := damagedKey{agent, seq}
		if !w.seen[k] {
			fresh = append(fresh, seq)
			if len(w.seen) < maxSeenDamaged {
				w.seen[k] = true
			}
		}
	}
	w.mu.Unlock()
	if len(fresh) > 0 {
		w.damagedTotal.Add(float64(len(fresh)))
		w.log.Error("queued records fail their checksum and are withheld from the device; the queue file is damaged: "+
			"list them with torporctl queue list, and see docs/operations.md, \"Store faults\"",
			"agent", agent, "seqs", fresh, "err", de.First)
	}
	return recs, de.Seqs, nil
}

// Ack implements queue.Store. With a queue.AckCounter it checks that the
// acknowledgement deleted every record it named (see watchedQueue). It
// runs through removing, which records the agent's tenant's bytes after
// it.
func (w *watchedQueue) Ack(ctx context.Context, agent string, seqs []uint64) error {
	return w.removing(ctx, agent, func() error { return w.ack(ctx, agent, seqs) })
}

func (w *watchedQueue) ack(ctx context.Context, agent string, seqs []uint64) error {
	ac, ok := w.Store.(queue.AckCounter)
	if !ok {
		return w.Store.Ack(ctx, agent, seqs)
	}
	n, err := ac.AckCount(ctx, agent, seqs)
	if err != nil {
		return err
	}
	distinct := slices.Compact(slices.Sorted(slices.Values(seqs)))
	if n >= len(distinct) {
		return nil
	}
	served, err := w.stillServed(ctx, agent, distinct)
	if err != nil {
		return err
	}
	missing := len(distinct) - n
	if len(served) == 0 {
		w.ackNothing.WithLabelValues("false").Add(float64(missing))
		w.log.Warn("an acknowledgement named records the queue no longer held (expired, purged, or acknowledged before)",
			"agent", agent, "acknowledged", len(distinct), "deleted", n)
		return nil
	}
	w.ackNothing.WithLabelValues("true").Add(float64(missing))
	w.log.Error("an acknowledgement deleted nothing of records the queue still serves: the queue file is damaged. "+
		"Stop the relay and start it again: it checks queue.db at start and names the fix (docs/operations.md, \"Store faults\")",
		"agent", agent, "seqs", served, "acknowledged", len(distinct), "deleted", n)
	return fmt.Errorf("%w (%s, seqs %v)", errAckDeletedNothing, agent, served)
}

// stillServed returns those of seqs (sorted, distinct) that Next still
// returns.
func (w *watchedQueue) stillServed(ctx context.Context, agent string, seqs []uint64) ([]uint64, error) {
	span := min(seqs[len(seqs)-1]-seqs[0]+1, 1000)
	recs, _, err := w.next(ctx, agent, seqs[0]-1, int(span), w.clk.Now())
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, r := range recs {
		if _, ok := slices.BinarySearch(seqs, r.Seq); ok {
			out = append(out, r.Seq)
		}
	}
	return out, nil
}
