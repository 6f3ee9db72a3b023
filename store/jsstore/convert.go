package jsstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/store/queue"
)

// The previous layout kept each agent's queue state in a stream of its
// own (StateStream, subjects <p>.qstate.<agent>, one message per agent),
// the bodies on the agent's subject of the records stream. Open converts
// it: see convertOldLayout. Every relay of the previous version must be
// stopped first (docs/scale-out.md): one still running would write states
// no converted relay reads.

// oldState is an agent's queue in the previous layout: the last seq
// handed out and the live records in seq order, each entry's Msg the
// stream sequence of its body.
type oldState struct {
	Agent string
	Last  uint64
	Live  []entry
}

// wireState is oldState as stored: a version byte (1) then this CBOR array.
// Senders are listed once in Peers and named by index in the entries,
// which keeps a full queue's state small (a few tens of KiB).
type wireState struct {
	_     struct{} `cbor:",toarray"`
	Agent string
	Last  uint64
	Peers []string
	Live  [][7]int64 // seq, msg, size, kind, peer index (-1: none), enqueued, expires
}

const stateVersion = 1

func unmarshalState(b []byte) (oldState, error) {
	if len(b) == 0 || b[0] != stateVersion {
		return oldState{}, fmt.Errorf("%w: queue state: unknown version", queue.ErrCorrupt)
	}
	var w wireState
	if err := cbor.Unmarshal(b[1:], &w); err != nil {
		return oldState{}, fmt.Errorf("%w: queue state: %v", queue.ErrCorrupt, err)
	}
	s := oldState{Agent: w.Agent, Last: w.Last, Live: make([]entry, 0, len(w.Live))}
	for _, v := range w.Live {
		e := entry{Seq: uint64(v[0]), Msg: uint64(v[1]), Size: v[2], Kind: queue.Kind(v[3]), Enqueued: v[5], Expires: v[6]}
		switch p := v[4]; {
		case p >= int64(len(w.Peers)) || p < -1:
			return oldState{}, fmt.Errorf("%w: queue state of %s: peer index %d", queue.ErrCorrupt, w.Agent, p)
		case p >= 0:
			e.From = w.Peers[p]
		}
		s.Live = append(s.Live, e)
	}
	return s, nil
}

// convertOldLayout moves every agent's queue out of the previous layout's
// state stream, if there is one: each live record is published again on
// the agent's subject in this layout, with its seq, sender, kind, times and
// body, then a marker carries the last seq handed out, and then the old
// state message is deleted. Relays converting at once, or one starting
// again after a conversion broke off, go on where the agent's subject has
// got to: a record whose seq the subject has already handed out is not
// published again. The old bodies stay on the subject, ignored, until
// their TTL removes them. The stream itself is left, empty.
//
// Whether the old stream is there is asked as the other setup steps ask
// theirs (retrySetup): a relay that starts while the cluster elects a
// meta leader (a server killed a moment before) waits for the answer.
func (c *Conn) convertOldLayout(ctx context.Context) error {
	var s jetstream.Stream
	err := c.retrySetup(ctx, func(ctx context.Context) (err error) {
		s, err = c.js.Stream(ctx, c.n.state)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			s, err = nil, nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("jsstore: stream %s: %w", c.n.state, err)
	}
	if s == nil {
		return nil
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(c.n.stateSubj+">"))
	if err != nil {
		return fmt.Errorf("jsstore: stream %s: %w", c.n.state, err)
	}
	q := c.Queue()
	for subj := range info.State.Subjects {
		m, err := s.GetLastMsgForSubject(ctx, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // converted meanwhile
		}
		var old oldState
		if err == nil {
			old, err = unmarshalState(m.Data)
		}
		if err == nil {
			err = q.convert(ctx, old)
		}
		if err == nil {
			if err = s.DeleteMsg(ctx, m.Sequence); errors.Is(err, jetstream.ErrMsgNotFound) {
				err = nil
			}
		}
		if err != nil {
			return fmt.Errorf("%w: converting %s: %w", ErrOldLayout, subj, err)
		}
	}
	return nil
}

// convert publishes old's records, in seq order, and a marker with its
// last seq on old.Agent's subject, each by compare-and-swap on the
// subject's view, skipping what the subject already holds.
func (q *Queue) convert(ctx context.Context, old oldState) error {
	subj := q.subject(old.Agent)
	av := q.lock(subj)
	defer av.mu.Unlock()
	for conflicts := 0; conflicts < maxAttempts; {
		if err := q.refresh(ctx, subj, av, nil); err != nil {
			return err
		}
		v := av.v
		i := 0
		for i < len(old.Live) && old.Live[i].Seq <= v.MaxSeq {
			i++
		}
		if i == len(old.Live) && v.MaxSeq >= old.Last {
			return nil
		}
		msg, err := q.convertMsg(ctx, old, i)
		if err != nil {
			return err
		}
		if _, err = q.publish(ctx, msg, v.Last); errors.Is(err, errConflict) {
			conflicts++
			err = q.catchUp(ctx, subj, av)
		}
		if err != nil {
			av.v = nil
			return err
		}
	}
	return fmt.Errorf("jsstore: %s: %d lost races in a row", old.Agent, maxAttempts)
}

// convertMsg is the message that converts old.Live[i]: the record with
// its body, or, past the last record or for a record whose body is gone
// (never served, as the previous layout did), a marker that hands its seq
// out.
func (q *Queue) convertMsg(ctx context.Context, old oldState, i int) (*nats.Msg, error) {
	subj := q.subject(old.Agent)
	if i == len(old.Live) {
		return markerMsg(subj, old.Last, nil)
	}
	e := old.Live[i]
	body, err := q.c.records.GetMsg(ctx, e.Msg)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return markerMsg(subj, e.Seq, nil)
	}
	if err != nil {
		return nil, err
	}
	r := queue.Record{Seq: e.Seq, Agent: old.Agent, From: e.From, Kind: e.Kind,
		EnqueuedAt: time.Unix(0, e.Enqueued).UTC(), ExpiresAt: time.Unix(0, e.Expires).UTC(), Body: body.Data}
	return recordMsg(subj, r, q.nextOp()), nil
}
