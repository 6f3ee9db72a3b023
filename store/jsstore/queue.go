package jsstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/store/queue"
)

// TTLGrace is added to a record's TTL for the JetStream per-message TTL
// that removes its body. The relay decides expiry by its own clock
// (Enqueue's now); the grace keeps a body until the relay has stopped
// serving it even when the relay's and the servers' clocks differ.
const TTLGrace = time.Hour

// maxAttempts bounds the compare-and-swap retries of one call; each lost
// race means another call on the same agent won, so progress is made.
const maxAttempts = 1000

// maxFailures bounds the failed reads and writes (not lost races) of one
// step; between them Conn.retry waits retryWait, doubled each time.
const (
	maxFailures = 5
	retryWait   = 50 * time.Millisecond
)

// retry runs fn again after a failure (a timeout, no responders while a
// stream elects a leader), up to maxFailures times, waiting in between.
// A lost race (errConflict), corrupt data and the end of ctx are not
// failures: retry returns them at once.
func (c *Conn) retry(ctx context.Context, fn func() error) error {
	wait := retryWait
	for failures := 1; ; failures++ {
		err := fn()
		if err == nil || errors.Is(err, errConflict) || errors.Is(err, queue.ErrCorrupt) || ctx.Err() != nil || failures == maxFailures {
			return err
		}
		if err := clock.Sleep(ctx, c.clk, wait); err != nil {
			return err
		}
		wait *= 2
	}
}

// Queue is queue.Store on JetStream. It is safe for concurrent use, also
// by many relays over the same streams.
type Queue struct {
	c *Conn

	mu     sync.RWMutex
	closed bool
}

var _ queue.Store = (*Queue)(nil)

// Queue returns the queue store over c's streams. Closing it does not
// close c.
func (c *Conn) Queue() *Queue { return &Queue{c: c} }

// Close implements queue.Store.
func (q *Queue) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return queue.ErrClosed
	}
	q.closed = true
	return nil
}

func (q *Queue) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.RLock()
	if q.closed {
		q.mu.RUnlock()
		return queue.ErrClosed
	}
	return nil
}

// load reads agent's queue state and its revision (the stream sequence of
// the state message; 0 when the agent has none) from the stream leader.
func (q *Queue) load(ctx context.Context, agent string) (qstate, uint64, error) {
	m, err := q.c.state.GetLastMsgForSubject(ctx, q.c.n.stateSubj+token(agent))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return qstate{Agent: agent}, 0, nil
	}
	if err != nil {
		return qstate{}, 0, err
	}
	s, err := unmarshalState(m.Data)
	if err == nil && s.Agent != agent {
		err = fmt.Errorf("%w: queue state of %s names %s", queue.ErrCorrupt, agent, s.Agent)
	}
	return s, m.Sequence, err
}

// errConflict is a compare-and-swap that lost: the state changed since
// it was read.
var errConflict = errors.New("jsstore: state changed")

// store writes s as agent's state if its revision is still rev.
func (q *Queue) store(ctx context.Context, s *qstate, rev uint64) error {
	b, err := s.marshal()
	if err != nil {
		return err
	}
	m := &nats.Msg{Subject: q.c.n.stateSubj + token(s.Agent), Data: b}
	_, err = q.c.js.PublishMsg(ctx, m, jetstream.WithExpectStream(q.c.n.state), jetstream.WithExpectLastSequencePerSubject(rev))
	if isConflict(err) {
		return errConflict
	}
	return err
}

func isConflict(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// update applies change to agent's state and stores the result by
// compare-and-swap, reading again and re-applying after a lost race or a
// failure (see Conn.retry), so change must be written to be applied
// again to the state it finds: a write that failed may have landed. When
// change reports no change nothing is written. It returns what the last
// change returned.
func (q *Queue) update(ctx context.Context, agent string, change func(*qstate) ([]entry, bool)) ([]entry, error) {
	return q.updateFrom(ctx, agent, nil, change)
}

// loaded is an agent's state as load read it, with its revision.
type loaded struct {
	s   qstate
	rev uint64
}

// updateFrom is update starting from first, a state the caller has just
// loaded (nil: none), which saves a read and a decode when nothing
// changed in between. first is used for the first attempt only: after a
// lost race or a failure the state is read again.
func (q *Queue) updateFrom(ctx context.Context, agent string, first *loaded, change func(*qstate) ([]entry, bool)) ([]entry, error) {
	for range maxAttempts {
		var out []entry
		err := q.c.retry(ctx, func() error {
			var s qstate
			var rev uint64
			var err error
			if first != nil {
				s, rev, first = first.s, first.rev, nil
			} else if s, rev, err = q.load(ctx, agent); err != nil {
				return err
			}
			var changed bool
			if out, changed = change(&s); !changed {
				return nil
			}
			return q.store(ctx, &s, rev)
		})
		if !errors.Is(err, errConflict) {
			return out, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("jsstore: %s: %d lost races in a row", agent, maxAttempts)
}

// deleteBodies deletes the records stream's messages of es; one already
// gone is fine, and one that a failure leaves behind is removed by its
// per-message TTL: no state names it any more.
func (q *Queue) deleteBodies(ctx context.Context, es []entry) {
	for _, e := range es {
		_ = q.c.records.DeleteMsg(ctx, e.Msg)
	}
}

// Ack implements queue.Store. The acknowledged records leave the state by
// compare-and-swap; their bodies are deleted after.
func (q *Queue) Ack(ctx context.Context, agent string, seqs []uint64) error {
	if err := q.enter(ctx); err != nil {
		return err
	}
	defer q.mu.RUnlock()
	if len(seqs) == 0 {
		return nil
	}
	acked := make(map[uint64]bool, len(seqs))
	for _, s := range seqs {
		acked[s] = true
	}
	gone, err := q.update(ctx, agent, func(s *qstate) ([]entry, bool) {
		out := s.drop(func(e entry) bool { return acked[e.Seq] })
		return out, len(out) > 0
	})
	if err != nil {
		return fmt.Errorf("queue: ack for %s: %w", agent, err)
	}
	q.deleteBodies(ctx, gone)
	return nil
}

// Stats implements queue.Store from the agent's state alone.
func (q *Queue) Stats(ctx context.Context, agent string, now time.Time) (queue.Stats, error) {
	if err := q.enter(ctx); err != nil {
		return queue.Stats{}, err
	}
	defer q.mu.RUnlock()
	s, _, err := q.load(ctx, agent)
	if err != nil {
		return queue.Stats{}, fmt.Errorf("queue: stats for %s: %w", agent, err)
	}
	st, _ := s.stats(now, "")
	return st, nil
}
