package jsstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/store/queue"
)

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

// maxViews bounds the agents whose queue view a Queue keeps in memory; past
// it, views of agents not in use are forgotten and read again when needed.
const maxViews = 1 << 16

// Queue is queue.Store on JetStream. It is safe for concurrent use, also
// by many relays over the same stream.
//
// It keeps a view of each agent's queue it has used (see view), so that an
// Enqueue whose view is current is one publish; the publish carries the
// view's version as its expected last subject sequence, so a view that is
// not current makes it fail, after which the view is brought up to date.
type Queue struct {
	c *Conn

	mu     sync.RWMutex
	closed bool

	vmu   sync.Mutex
	views map[string]*agentView // by subject
	wants map[string]string     // moves waiting for a queue to empty, by agent (place.go)

	opPrefix string
	ops      atomic.Uint64
}

// agentView is the view of one of an agent's subjects, nil until read;
// mu serializes the calls on the subject within this Queue (JetStream
// would refuse all but one of their writes anyway). floor is the last seq
// handed out on the subject the queue moved from, below which no seq is
// handed out here (place.go).
type agentView struct {
	mu    sync.Mutex
	v     *view
	floor uint64
}

// raise sets av's floor to at least floor.
func (av *agentView) raise(floor uint64) {
	av.floor = max(av.floor, floor)
	if av.v != nil {
		av.v.MaxSeq = max(av.v.MaxSeq, av.floor)
	}
}

var _ queue.Store = (*Queue)(nil)

// Queue returns the queue store over c's stream. Closing it does not
// close c.
func (c *Conn) Queue() *Queue {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &Queue{c: c, views: map[string]*agentView{}, wants: map[string]string{}, opPrefix: hex.EncodeToString(b) + "-"}
}

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

// lock returns the view holder of the subject subj, locked.
func (q *Queue) lock(subj string) *agentView {
	q.vmu.Lock()
	av := q.views[subj]
	if av == nil {
		if len(q.views) >= maxViews {
			for a, old := range q.views {
				if old.mu.TryLock() {
					delete(q.views, a)
					old.mu.Unlock()
				}
				if len(q.views) < maxViews*3/4 {
					break
				}
			}
		}
		av = &agentView{}
		q.views[subj] = av
	}
	q.vmu.Unlock()
	av.mu.Lock()
	return av
}

// subject is agent's default subject (place.go).
func (q *Queue) subject(agent string) string { return q.c.n.recordsSubj + token(agent) }

// refresh brings av's view of subj up to date from the stream leader: it
// folds the messages on the subject after the view's version,
// one request each, and one more that finds none. Bodies of the records it
// reads go into bodies when it is not nil. On an error av's view is
// dropped, to be read whole next time.
func (q *Queue) refresh(ctx context.Context, subj string, av *agentView, bodies map[uint64][]byte) error {
	if av.v == nil {
		av.v = &view{MaxSeq: av.floor}
	}
	for {
		var m *jetstream.RawStreamMsg
		err := q.c.retry(ctx, func() (err error) {
			m, err = q.c.records.GetMsg(ctx, av.v.Last+1, jetstream.WithGetMsgSubject(subj))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				m, err = nil, nil // up to date: not a failure to retry
			}
			return err
		})
		if err == nil && m == nil {
			return nil
		}
		if err == nil {
			err = av.v.fold(m.Header, m.Data, m.Sequence)
		}
		if err != nil {
			av.v = nil
			return err
		}
		if bodies != nil && m.Header.Get(hdrMarker) == "" {
			bodies[m.Sequence] = m.Data
		}
	}
}

// catchUp brings av's view up to date after a publish on its version was
// refused. When no message came after the version, the subject's last
// message was removed from under the view (its stream purged by an
// operator, or a body of the previous layout gone by its TTL): the view is
// read again whole.
func (q *Queue) catchUp(ctx context.Context, subj string, av *agentView) error {
	var last uint64
	if av.v != nil {
		last = av.v.Last
	}
	if err := q.refresh(ctx, subj, av, nil); err != nil || av.v.Last != last {
		return err
	}
	av.v = nil
	return q.refresh(ctx, subj, av, nil)
}

// errConflict is a publish whose expected last subject sequence did not
// hold: the queue changed since the view was read.
var errConflict = errors.New("jsstore: queue changed")

// published is what publish learned of a write.
type published struct {
	seq    uint64 // the message's stream sequence
	unsure bool   // an attempt went out unanswered and may have landed
	dup    bool   // the message was already stored: seq is the first write's
}

// publish stores m on its subject if the subject's last stream sequence
// is still last, and returns the new message's stream sequence.
//
// A failed attempt the server did not answer (a timeout, a connection
// lost in flight) may still be stored: its answer may be lost, or a
// leader that lost its quorum may hold it in its log and commit it once
// the quorum is back. Every attempt carries the same expected last
// sequence and, for a record, the same message id, so at most one of
// them lands; unsure reports that one went out unanswered, dup that the
// stream had the message already. Only the server's own refusal and "no
// responders" (nothing received the request) are certain.
func (q *Queue) publish(ctx context.Context, m *nats.Msg, last uint64) (published, error) {
	var p published
	err := q.c.retry(ctx, func() error {
		seq, dup, err := q.c.publishAt(ctx, m, q.c.n.records, last)
		switch {
		case isConflict(err):
			return errConflict
		case err == nil:
			p.seq, p.dup = seq, dup
		case !refusedForCertain(err):
			p.unsure = true
		}
		return err
	})
	return p, err
}

// refusedForCertain reports whether a failed publish cannot have been
// stored: the server answered with an error, or no server received it.
func refusedForCertain(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) || errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders)
}

func isConflict(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// drop takes the live records of agent for which gone is true out of its
// queue: a marker naming them is published (compare-and-swap on the view's
// version, after bringing the view up to date), then their messages are
// deleted. It returns how many it took out. A queue it leaves empty moves
// if a Place asked for it.
func (q *Queue) drop(ctx context.Context, agent string, gone func(entry) bool) (int, error) {
	for range maxAttempts {
		av, w, err := q.fresh(ctx, agent, nil)
		if err != nil {
			return 0, err
		}
		n, err := q.dropAt(ctx, av, w, gone)
		if err == nil && len(av.v.Live) == 0 {
			if to := q.wanted(agent); to != "" {
				_, _ = q.moveAt(ctx, agent, av, w, to) // it waits for the next drop or Place if it fails
			}
		}
		av.mu.Unlock()
		if !errors.Is(err, errConflict) {
			return n, err
		}
	}
	return 0, fmt.Errorf("jsstore: %s: %d lost races in a row", agent, maxAttempts)
}

// dropAt is drop on w.subj, whose view av holds, current and locked. A
// lost race is errConflict, after which av's view is up to date.
func (q *Queue) dropAt(ctx context.Context, av *agentView, w where, gone func(entry) bool) (int, error) {
	v := av.v
	var seqs []uint64
	n := 0
	for _, e := range v.Live {
		if gone(e) {
			seqs = append(seqs, e.Seq)
			n++
		}
	}
	if n == 0 {
		q.cleanup(ctx, v)
		return 0, nil
	}
	for _, e := range v.Gone {
		seqs = append(seqs, e.Seq)
	}
	m, err := markerMsg(w.subj, v.MaxSeq, seqs)
	if err != nil {
		return 0, err
	}
	p, err := q.publish(ctx, m, v.Last)
	seq := p.seq
	if errors.Is(err, errConflict) {
		if err := q.catchUp(ctx, w.subj, av); err != nil {
			return 0, err
		}
		return 0, errConflict
	}
	if err == nil {
		err = v.fold(m.Header, m.Data, seq)
	}
	if err != nil {
		av.v = nil // the marker may have landed
		return 0, err
	}
	q.cleanup(ctx, v)
	return n, nil
}

// cleanup deletes the messages of the records markers named and of every
// marker but the last, which names every record an earlier one named
// whose message may remain. One already gone is fine; one whose delete
// failed stays in v and is deleted next time.
func (q *Queue) cleanup(ctx context.Context, v *view) {
	deleted := func(msg uint64) bool {
		err := q.c.records.DeleteMsg(ctx, msg)
		var apiErr *jetstream.APIError
		return err == nil || errors.Is(err, jetstream.ErrMsgNotFound) ||
			errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeMessageNotFound
	}
	keep := v.Gone[:0]
	for _, e := range v.Gone {
		if !deleted(e.Msg) {
			keep = append(keep, e)
		}
	}
	v.Gone = keep
	if len(v.Markers) > 1 {
		last := v.Markers[len(v.Markers)-1]
		old := v.Markers[:0]
		for _, m := range v.Markers[:len(v.Markers)-1] {
			if !deleted(m) {
				old = append(old, m)
			}
		}
		v.Markers = append(old, last)
	}
}

// Ack implements queue.Store: the acknowledged records leave the queue by
// a marker; their messages are deleted after.
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
	if _, err := q.drop(ctx, agent, func(e entry) bool { return acked[e.Seq] }); err != nil {
		return fmt.Errorf("queue: ack for %s: %w", agent, err)
	}
	return nil
}

// Stats implements queue.Store from the agent's view, brought up to date
// from the stream leader.
func (q *Queue) Stats(ctx context.Context, agent string, now time.Time) (queue.Stats, error) {
	if err := q.enter(ctx); err != nil {
		return queue.Stats{}, err
	}
	defer q.mu.RUnlock()
	av, _, err := q.fresh(ctx, agent, nil)
	if err != nil {
		return queue.Stats{}, fmt.Errorf("queue: stats for %s: %w", agent, err)
	}
	defer av.mu.Unlock()
	st, _ := av.v.stats(now, "")
	return st, nil
}

// nextOp returns an id for one Enqueue call, unique across relays.
func (q *Queue) nextOp() string { return q.opPrefix + strconv.FormatUint(q.ops.Add(1), 36) }
