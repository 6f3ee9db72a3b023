package jsstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// Subjects of a tenant's queues
//
// An agent's queue starts on its default subject, p.qrec.<agent>: the
// subject of every queue of a relay without tenants, so that a stream of
// the previous release needs no conversion. Place moves the queue of a
// device of tenant T to p.qrec.<h(T)>.<agent>, h the unpadded base64url
// SHA-256 of T's owner DID (as the tenants ledger's keys), so that one
// subject filter, p.qrec.<h(T)>.>, covers every queue of the tenant.
//
// A move is one message: a moved marker (state.go, wireMoved) on the
// subject the queue is on, naming the new one, written by
// compare-and-swap on that subject's version and only when no record is
// live there. Nothing is copied, so nothing can be lost or served twice:
// a queue holding records stays where it is until they are acknowledged
// or purged (Place reports false and the Queue moves it at the Ack or
// Purge that empties it). Every call finds the queue by following the
// moved markers from the default subject (place): a marker at stream
// sequence m on subject S naming X sends the reader to X, where the queue
// is unless X has a moved marker of its own written after m. Stream
// sequences order every subject of the stream, so a queue may move back
// to a subject it left (a device leaving its tenant returns to its
// default subject) without a loop. The seqs go on across a move: the
// moved marker carries the last seq handed out, and the new subject's
// first record takes the next (agentView.floor).
//
// Why this is safe with relays writing at once: the subject the queue is
// on changes only by a moved marker written on it, a compare-and-swap on
// its version, so a write on that subject that was checked against the
// version before the marker is refused and brings its view up to date,
// where it finds the marker and follows it; a write on a subject the
// queue left is refused likewise. So every record lands on the subject
// the queue is on when it lands, and the bounds are checked on that
// subject's whole queue.

// where is the subject an agent's queue is on, as followed from its
// default subject: in is the stream sequence of the moved marker that
// sent the queue there (0 for the default subject) and floor the last
// seq handed out before it.
type where struct {
	subj  string
	in    uint64
	floor uint64
}

// current reports whether v, a view of w.subj, is where the queue is: the
// subject has not moved on since the marker that sent the queue there.
func (w where) current(v *view) bool { return v.MovedAt <= w.in }

// errMoved is a call that found its agent's queue moved from the subject
// it was working on: it starts again from the default subject.
var errMoved = errors.New("jsstore: queue moved")

// suffix is the part of agent's queue subject after p.qrec.: its default
// subject for tenant "" (a device in no tenant), else the tenant's.
func suffix(agent, tenant string) string {
	if tenant == "" {
		return token(agent)
	}
	return hkey(tenant) + "." + token(agent)
}

// validSuffix reports whether s is a suffix as suffix makes them: one or
// two tokens of base64url.
func validSuffix(s string) bool {
	toks := strings.Split(s, ".")
	if len(toks) > 2 {
		return false
	}
	for _, t := range toks {
		if t == "" || strings.IndexFunc(t, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
		}) >= 0 {
			return false
		}
	}
	return true
}

// place follows agent's moved markers from its default subject and
// returns where the queue is, with that subject's view holder locked.
// Views read before are used as they are unless fresh: a write checked
// against a stale one is refused anyway, and a caller that then finds its
// subject moved calls place again with fresh set.
func (q *Queue) place(ctx context.Context, agent string, fresh bool) (*agentView, where, error) {
	w := where{subj: q.subject(agent)}
	for range maxAttempts {
		av := q.lock(w.subj)
		av.raise(w.floor)
		if av.v == nil || fresh {
			if err := q.refresh(ctx, w.subj, av, nil); err != nil {
				av.mu.Unlock()
				return nil, w, err
			}
		}
		if w.current(av.v) {
			return av, w, nil
		}
		w = where{subj: q.c.n.recordsSubj + av.v.Moved, in: av.v.MovedAt, floor: av.v.MaxSeq}
		av.mu.Unlock()
	}
	return nil, w, fmt.Errorf("jsstore: %s: more than %d moved markers", agent, maxAttempts)
}

// fresh is place with the view of the subject the queue is on brought up
// to date from the stream leader (bodies as refresh takes them).
func (q *Queue) fresh(ctx context.Context, agent string, bodies map[uint64][]byte) (*agentView, where, error) {
	for i := range maxAttempts {
		av, w, err := q.place(ctx, agent, i > 0)
		if err != nil {
			return nil, w, err
		}
		if err := q.refresh(ctx, w.subj, av, bodies); err != nil {
			av.mu.Unlock()
			return nil, w, err
		}
		if w.current(av.v) {
			return av, w, nil
		}
		av.mu.Unlock()
	}
	return nil, where{}, fmt.Errorf("jsstore: %s: %d lost races in a row", agent, maxAttempts)
}

// enqueuePlaced is enqueue on the subject the queue is on, found again
// when it moved meanwhile; but for a record that may have landed on the
// subject it left (queue.ErrUnconfirmed), which is not sent again.
func (q *Queue) enqueuePlaced(ctx context.Context, r queue.Record, b queuebounds.Bounds, now time.Time) (uint64, error) {
	var err error
	for i := range maxAttempts {
		var seq uint64
		var av *agentView
		var w where
		if av, w, err = q.place(ctx, r.Agent, i > 0); err == nil {
			seq, err = q.enqueue(ctx, av, w, r, b, now)
			av.mu.Unlock()
		}
		if !errors.Is(err, errMoved) || errors.Is(err, queue.ErrUnconfirmed) {
			return seq, err
		}
	}
	return 0, err
}

// Place moves agent's queue to the subjects of tenant (the owner DID of
// the tenant the device is in; "" for none: its default subject) when it
// is elsewhere and holds no record, and reports whether it moved it. A
// queue that holds records stays where it is; this Queue moves it when an
// Ack or Purge of its own leaves it empty, or a later Place does.
func (q *Queue) Place(ctx context.Context, agent, tenant string) (bool, error) {
	if err := q.enter(ctx); err != nil {
		return false, err
	}
	defer q.mu.RUnlock()
	to := suffix(agent, tenant)
	for range maxAttempts {
		av, w, err := q.fresh(ctx, agent, nil)
		if err != nil {
			return false, fmt.Errorf("queue: place %s: %w", agent, err)
		}
		moved, err := q.moveAt(ctx, agent, av, w, to)
		av.mu.Unlock()
		if !errors.Is(err, errConflict) {
			return moved, err
		}
	}
	return false, fmt.Errorf("jsstore: %s: %d lost races in a row", agent, maxAttempts)
}

// moveAt moves the queue from w.subj, av's current and locked view, to
// p.qrec.<to> if it is not there and holds no record; otherwise it
// remembers the move for the Ack that empties it. A lost race is
// errConflict, after which av's view is up to date.
func (q *Queue) moveAt(ctx context.Context, agent string, av *agentView, w where, to string) (bool, error) {
	v := av.v
	if w.subj == q.c.n.recordsSubj+to {
		q.want(agent, "")
		return false, nil
	}
	if len(v.Live) > 0 {
		q.want(agent, to)
		return false, nil
	}
	gone := make([]uint64, 0, len(v.Gone))
	for _, e := range v.Gone {
		gone = append(gone, e.Seq)
	}
	m, err := movedMsg(w.subj, v.MaxSeq, gone, to)
	if err != nil {
		return false, err
	}
	p, err := q.publish(ctx, m, v.Last)
	seq := p.seq
	if errors.Is(err, errConflict) {
		if err := q.catchUp(ctx, w.subj, av); err != nil {
			return false, err
		}
		return false, errConflict
	}
	if err == nil {
		err = v.fold(m.Header, m.Data, seq)
	}
	if err != nil {
		av.v = nil // the marker may have landed
		return false, err
	}
	q.want(agent, "")
	q.cleanup(ctx, v)
	return true, nil
}

// want records that agent's queue is to move to p.qrec.<to> once empty
// ("": no move waits). The moves waiting are bounded as the views are.
func (q *Queue) want(agent, to string) {
	q.vmu.Lock()
	defer q.vmu.Unlock()
	if to == "" {
		delete(q.wants, agent)
		return
	}
	if len(q.wants) < maxViews {
		q.wants[agent] = to
	}
}

// wanted is the move waiting for agent's queue to empty, if any.
func (q *Queue) wanted(agent string) string {
	q.vmu.Lock()
	defer q.vmu.Unlock()
	return q.wants[agent]
}

// agentOf is the agent whose queue subj (a subject of the records stream)
// may hold: the DID its last token encodes.
func (q *Queue) agentOf(subj string) (string, error) {
	rest := strings.TrimPrefix(subj, q.c.n.recordsSubj)
	if !validSuffix(rest) {
		return "", fmt.Errorf("queue subject %q", subj)
	}
	agent, err := decodeToken(rest[strings.LastIndexByte(rest, '.')+1:])
	if err != nil {
		return "", fmt.Errorf("queue subject %q", subj)
	}
	return agent, nil
}
