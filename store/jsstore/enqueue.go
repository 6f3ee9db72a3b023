package jsstore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// admit checks b against s's records live at now, for r.
func admit(s *qstate, r queue.Record, b queuebounds.Bounds, now time.Time) *queue.FullError {
	live, fromPeer := s.stats(now, r.From)
	return queue.Admit(live, fromPeer, r, b)
}

// Enqueue implements queue.Store. The body is published to the records
// stream first; the record exists once the agent's state names it, which
// a compare-and-swap on the state checked against the bounds makes so.
// See the package doc for why two relays cannot both take the last slot.
func (q *Queue) Enqueue(ctx context.Context, r queue.Record, b queuebounds.Bounds, now time.Time) (queue.Record, error) {
	if err := q.enter(ctx); err != nil {
		return queue.Record{}, err
	}
	defer q.mu.RUnlock()
	r, err := queue.Prepare(r, b, now)
	if err != nil {
		return queue.Record{}, err
	}
	var s loaded
	err = q.c.retry(ctx, func() (err error) { s.s, s.rev, err = q.load(ctx, r.Agent); return err })
	if err != nil {
		return queue.Record{}, fmt.Errorf("queue: enqueue for %s: %w", r.Agent, err)
	}
	if fe := admit(&s.s, r, b, now); fe != nil {
		return queue.Record{}, fe // refused before writing anything
	}
	// A body whose publish failed but landed is named by no state and
	// goes with its TTL.
	var ack *jetstream.PubAck
	err = q.c.retry(ctx, func() (err error) {
		m := &nats.Msg{Subject: q.c.n.recordsSubj + token(r.Agent), Data: r.Body, Header: nats.Header{"Torpor-Agent": {r.Agent}}}
		ack, err = q.c.js.PublishMsg(ctx, m, jetstream.WithExpectStream(q.c.n.records), jetstream.WithMsgTTL(b.TTL+TTLGrace))
		return err
	})
	if err != nil {
		return queue.Record{}, fmt.Errorf("queue: enqueue for %s: storing the body: %w", r.Agent, err)
	}
	e := entry{Msg: ack.Sequence, Size: int64(len(r.Body)), Kind: r.Kind, From: r.From,
		Enqueued: r.EnqueuedAt.UnixNano(), Expires: r.ExpiresAt.UnixNano()}
	seq, refused, err := q.commit(ctx, r, b, e, &s, now)
	if err != nil || refused != nil {
		q.deleteBodies(context.WithoutCancel(ctx), []entry{e})
		if refused != nil {
			return queue.Record{}, refused
		}
		return queue.Record{}, fmt.Errorf("queue: enqueue for %s: %w", r.Agent, err)
	}
	r.Seq = seq
	return r, nil
}

// commit adds e to r.Agent's state with the next seq unless a bound
// refuses it, dropping the records expired at now in the same write. It
// starts from first, the state Enqueue read before storing the body: when
// no other write came in between, the compare-and-swap succeeds without
// reading the state again.
func (q *Queue) commit(ctx context.Context, r queue.Record, b queuebounds.Bounds, e entry, first *loaded, now time.Time) (uint64, *queue.FullError, error) {
	var refused *queue.FullError
	expired, err := q.updateFrom(ctx, r.Agent, first, func(s *qstate) ([]entry, bool) {
		refused = nil
		if i := slices.IndexFunc(s.Live, func(x entry) bool { return x.Msg == e.Msg }); i >= 0 {
			e.Seq = s.Live[i].Seq // an earlier write of this call landed
			return nil, false
		}
		gone := s.drop(func(x entry) bool { return x.expired(now) })
		if refused = admit(s, r, b, now); refused != nil {
			return nil, false
		}
		s.Last++
		e.Seq = s.Last
		s.Live = append(s.Live, e)
		return gone, true
	})
	if err != nil {
		return 0, nil, err
	}
	q.deleteBodies(ctx, expired)
	return e.Seq, refused, nil
}

// Next implements queue.Store: the state says which records are live, in
// seq order; their bodies are read from the records stream, several at a
// time. A body that is missing (its enqueue failed after its state write
// may have landed) is skipped and its entry dropped.
func (q *Queue) Next(ctx context.Context, agent string, after uint64, max int, now time.Time) ([]queue.Record, error) {
	if err := q.enter(ctx); err != nil {
		return nil, err
	}
	defer q.mu.RUnlock()
	if max <= 0 || after == ^uint64(0) {
		return nil, nil
	}
	s, _, err := q.load(ctx, agent)
	if err != nil {
		return nil, fmt.Errorf("queue: next for %s: %w", agent, err)
	}
	live := slices.DeleteFunc(s.Live, func(e entry) bool { return e.Seq <= after || e.expired(now) })
	var out []queue.Record
	missing := map[uint64]bool{}
	for len(live) > 0 && len(out) < max {
		batch := live[:min(max-len(out), len(live))]
		live = live[len(batch):]
		bodies, found, err := q.bodies(ctx, batch)
		if err != nil {
			return nil, fmt.Errorf("queue: next for %s: %w", agent, err)
		}
		for i, e := range batch {
			if !found[i] {
				missing[e.Msg] = true
				continue
			}
			out = append(out, queue.Record{Seq: e.Seq, Agent: agent, From: e.From, Kind: e.Kind,
				EnqueuedAt: time.Unix(0, e.Enqueued).UTC(), ExpiresAt: time.Unix(0, e.Expires).UTC(), Body: bodies[i]})
		}
	}
	if len(missing) > 0 {
		_, err = q.update(ctx, agent, func(s *qstate) ([]entry, bool) {
			out := s.drop(func(e entry) bool { return missing[e.Msg] })
			return out, len(out) > 0
		})
	}
	return out, err
}

// bodyReaders bounds the concurrent reads of one Next.
const bodyReaders = 16

// bodies reads the bodies of es from the records stream, bodyReaders at a
// time; found is false for a body that is gone.
func (q *Queue) bodies(ctx context.Context, es []entry) (bodies [][]byte, found []bool, err error) {
	bodies, found = make([][]byte, len(es)), make([]bool, len(es))
	errs := make([]error, len(es))
	sem := make(chan struct{}, bodyReaders)
	var wg sync.WaitGroup
	for i, e := range es {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			m, err := q.c.records.GetMsg(ctx, e.Msg)
			switch {
			case errors.Is(err, jetstream.ErrMsgNotFound):
			case err != nil:
				errs[i] = err
			default:
				bodies[i], found[i] = append([]byte{}, m.Data...), true
			}
		})
	}
	wg.Wait()
	return bodies, found, errors.Join(errs...)
}

// Purge implements queue.Store: it drops the expired records from every
// agent's state and deletes their bodies. It reads the states, one per
// agent, never the records.
func (q *Queue) Purge(ctx context.Context, now time.Time) (int, error) {
	if err := q.enter(ctx); err != nil {
		return 0, err
	}
	defer q.mu.RUnlock()
	info, err := q.c.state.Info(ctx, jetstream.WithSubjectFilter(q.c.n.stateSubj+">"))
	if err != nil {
		return 0, fmt.Errorf("queue: purge: %w", err)
	}
	n := 0
	for subj := range info.State.Subjects {
		agent, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(subj, q.c.n.stateSubj))
		if err != nil {
			return n, fmt.Errorf("%w: state subject %q", queue.ErrCorrupt, subj)
		}
		gone, err := q.update(ctx, string(agent), func(s *qstate) ([]entry, bool) {
			out := s.drop(func(e entry) bool { return e.expired(now) })
			return out, len(out) > 0
		})
		if err != nil {
			return n, fmt.Errorf("queue: purge: %w", err)
		}
		n += len(gone)
		q.deleteBodies(ctx, gone)
	}
	return n, nil
}
