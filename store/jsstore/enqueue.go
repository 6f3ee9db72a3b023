package jsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// Enqueue implements queue.Store with one publish when the agent's view is
// current: the record's message, with the bounds checked against the view
// and the view's version as the expected last subject sequence. A publish
// refused for a stale version brings the view up to date and checks
// again; a refusal by the bounds is given only on a view just brought up
// to date from the stream leader. See the package doc for why two relays
// cannot both take the last slot.
func (q *Queue) Enqueue(ctx context.Context, r queue.Record, b queuebounds.Bounds, now time.Time) (queue.Record, error) {
	if err := q.enter(ctx); err != nil {
		return queue.Record{}, err
	}
	defer q.mu.RUnlock()
	r, err := queue.Prepare(r, b, now)
	if err != nil {
		return queue.Record{}, err
	}
	seq, err := q.enqueuePlaced(ctx, r, b, now)
	var fe *queue.FullError
	if errors.As(err, &fe) {
		return queue.Record{}, fe
	}
	if err != nil {
		return queue.Record{}, fmt.Errorf("queue: enqueue for %s: %w", r.Agent, err)
	}
	r.Seq = seq
	return r, nil
}

// enqueue stores r on w.subj under av's lock and returns its seq. It
// returns errMoved when it finds the queue moved from w.subj; then, if an
// attempt went out unanswered, queue.ErrUnconfirmed too (place.go).
//
// Once an attempt went out unanswered (publish's unsure), the record may
// still land, and a later conflict does not say otherwise: a leader that
// lost its quorum checks the expected sequence against its log, which
// holds that attempt uncommitted, so it refuses the next ones while the
// stream shows nothing new (a phantom conflict). Then enqueue backs off as
// retry does, and a failure in the end is queue.ErrUnconfirmed, not a
// refusal (test/cluster's TestNATSNodeKilledUnderLoad delivered such a
// record once the quorum was back).
func (q *Queue) enqueue(ctx context.Context, av *agentView, w where, r queue.Record, b queuebounds.Bounds, now time.Time) (uint64, error) {
	op := q.nextOp()
	t := try{wait: retryWait} // place may have read the view long ago
	for range maxAttempts {
		v := av.v
		if !w.current(v) {
			return 0, t.settle(errMoved)
		}
		live, fromPeer := v.stats(now, r.From)
		if fe := queue.Admit(live, fromPeer, r, b); fe != nil {
			if t.fresh {
				return 0, t.settle(fe)
			}
			if err := q.refresh(ctx, w.subj, av, nil); err != nil {
				return 0, t.settle(err)
			}
			t.fresh = true
			continue
		}
		r.Seq = v.MaxSeq + 1
		p, err := q.publish(ctx, recordMsg(w.subj, r, op), v.Last)
		if p.unsure {
			t.unsure, t.sent = true, r.Seq
		}
		if err == nil && p.dup {
			return q.landedEarlier(ctx, w.subj, av, op, t.sent)
		}
		if err == nil {
			v.add(entry{Seq: r.Seq, Msg: p.seq, Size: int64(len(r.Body)), Kind: r.Kind, From: r.From,
				Enqueued: r.EnqueuedAt.UnixNano(), Expires: r.ExpiresAt.UnixNano(), Op: op})
			v.Last, v.MaxSeq = p.seq, r.Seq
			return r.Seq, nil
		}
		if !errors.Is(err, errConflict) {
			av.v = nil // the publish may have landed
			return 0, t.settle(err)
		}
		// Another write came first, or an earlier try of this one that
		// failed but landed.
		seq, found, err := q.afterConflict(ctx, w.subj, av, op, &t)
		if err != nil || found {
			return seq, t.settle(err)
		}
	}
	return 0, t.settle(fmt.Errorf("jsstore: %s: %d lost races in a row", r.Agent, maxAttempts))
}

// landedEarlier is Enqueue's answer when a publish of op was answered
// "duplicate": an earlier attempt landed unanswered. Its seq is read back
// from the stream; when its record is gone already (taken by the device,
// purged or expired before the retry), it is sent, the seq of the last
// attempt that went out unanswered (the one that landed, but for the rare
// enqueue with two such attempts, where it serves only as the link's
// wake-up hint).
func (q *Queue) landedEarlier(ctx context.Context, subj string, av *agentView, op string, sent uint64) (uint64, error) {
	av.v = nil
	if err := q.refresh(ctx, subj, av, nil); err != nil {
		return sent, nil // stored all the same; the view is read again next time
	}
	if i := slices.IndexFunc(av.v.Live, func(e entry) bool { return e.Op == op }); i >= 0 {
		return av.v.Live[i].Seq, nil
	}
	return sent, nil
}

// try is what one enqueue learned over its attempts.
type try struct {
	fresh    bool          // the view was just read from the stream
	unsure   bool          // an attempt went out unanswered and may land
	sent     uint64        // the seq of the last attempt that went out unanswered
	phantoms int           // conflicts after which the stream showed nothing new
	wait     time.Duration // the next back-off after a phantom conflict
}

// settle is err as enqueue returns it: queue.ErrUnconfirmed when an
// attempt may still land.
func (t *try) settle(err error) error {
	if err == nil || !t.unsure {
		return err
	}
	return fmt.Errorf("%w: %w", queue.ErrUnconfirmed, err)
}

// afterConflict brings av's view up to date after a conflict and reports
// whether the record op is in it (found, with its seq). A conflict after
// which the stream shows nothing new is a phantom: a write the leader
// holds but has not committed. It backs off before the next attempt,
// and fails after maxFailures of them.
func (q *Queue) afterConflict(ctx context.Context, subj string, av *agentView, op string, t *try) (uint64, bool, error) {
	last := av.v.Last
	if err := q.catchUp(ctx, subj, av); err != nil {
		return 0, false, err
	}
	t.fresh = true
	if i := slices.IndexFunc(av.v.Live, func(e entry) bool { return e.Op == op }); i >= 0 {
		return av.v.Live[i].Seq, true, nil
	}
	if av.v.Last != last {
		t.phantoms, t.wait = 0, retryWait
		return 0, false, nil
	}
	if t.phantoms++; t.phantoms == maxFailures {
		return 0, false, fmt.Errorf("jsstore: %s: the stream refused %d writes at a sequence it does not show (a leader without quorum holds an uncommitted write)", subj, maxFailures)
	}
	if err := clock.Sleep(ctx, q.c.clk, t.wait); err != nil {
		return 0, false, err
	}
	t.wait *= 2
	return 0, false, nil
}

// Next implements queue.Store: the agent's view, brought up to date from
// the stream leader, says which records are live, in seq order; the
// bodies not read while bringing it up to date are read from the stream,
// several at a time. A record whose message is gone was acknowledged or
// purged meanwhile and is left out.
func (q *Queue) Next(ctx context.Context, agent string, after uint64, max int, now time.Time) ([]queue.Record, error) {
	if err := q.enter(ctx); err != nil {
		return nil, err
	}
	defer q.mu.RUnlock()
	if max <= 0 || after == ^uint64(0) {
		return nil, nil
	}
	bodies := map[uint64][]byte{}
	av, _, err := q.fresh(ctx, agent, bodies)
	if err != nil {
		return nil, fmt.Errorf("queue: next for %s: %w", agent, err)
	}
	live := slices.DeleteFunc(slices.Clone(av.v.Live), func(e entry) bool { return e.Seq <= after || e.expired(now) })
	av.mu.Unlock()
	var out []queue.Record
	for len(live) > 0 && len(out) < max {
		batch := live[:min(max-len(out), len(live))]
		live = live[len(batch):]
		if err := q.bodies(ctx, batch, bodies); err != nil {
			return nil, fmt.Errorf("queue: next for %s: %w", agent, err)
		}
		for _, e := range batch {
			body, ok := bodies[e.Msg]
			if !ok {
				continue
			}
			out = append(out, queue.Record{Seq: e.Seq, Agent: agent, From: e.From, Kind: e.Kind,
				EnqueuedAt: time.Unix(0, e.Enqueued).UTC(), ExpiresAt: time.Unix(0, e.Expires).UTC(), Body: body})
		}
	}
	return out, nil
}

// bodyReaders bounds the concurrent reads of one Next.
const bodyReaders = 16

// bodies reads into have the bodies of es it lacks, bodyReaders at a
// time; a body that is gone stays missing.
func (q *Queue) bodies(ctx context.Context, es []entry, have map[uint64][]byte) error {
	var need []uint64
	for _, e := range es {
		if _, ok := have[e.Msg]; !ok {
			need = append(need, e.Msg)
		}
	}
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, bodyReaders)
	var wg sync.WaitGroup
	for _, msg := range need {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			m, err := q.c.records.GetMsg(ctx, msg)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, jetstream.ErrMsgNotFound):
			case err != nil:
				errs = append(errs, err)
			default:
				have[msg] = m.Data
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Purge implements queue.Store: it takes the expired records out of every
// agent's queue, agent by agent (the subjects of the stream name the
// agents, each on its default subject and those of tenants it was in).
func (q *Queue) Purge(ctx context.Context, now time.Time) (int, error) {
	if err := q.enter(ctx); err != nil {
		return 0, err
	}
	defer q.mu.RUnlock()
	info, err := q.c.records.Info(ctx, jetstream.WithSubjectFilter(q.c.n.recordsSubj+">"))
	if err != nil {
		return 0, fmt.Errorf("queue: purge: %w", err)
	}
	n := 0
	seen := map[string]bool{}
	for subj := range info.State.Subjects {
		agent, err := q.agentOf(subj)
		if err != nil {
			return n, fmt.Errorf("%w: %v", queue.ErrCorrupt, err)
		}
		if seen[agent] {
			continue
		}
		seen[agent] = true
		gone, err := q.drop(ctx, agent, func(e entry) bool { return e.expired(now) })
		if err != nil {
			return n, fmt.Errorf("queue: purge: %w", err)
		}
		n += gone
	}
	return n, nil
}
