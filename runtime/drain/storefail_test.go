package drain_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/transport/a2a"
)

var bucketPartial = []byte("failpoint-partial")

// failpointSessions is runtimetest.Sessions with a failpoint in Open: when
// fail is set, Open writes half of a change and then a Put that bbolt
// refuses (a key over bolt.MaxKeySize), as a session save failing halfway
// (disk full, I/O error) would; when drop names a group, Open finds its
// stored state corrupt and deletes it in tx, as package session fails
// closed, returning a *session.CorruptError that wraps ErrDropped.
type failpointSessions struct {
	runtimetest.Sessions
	fail *atomic.Bool
	drop string
}

func (s failpointSessions) Open(tx *bolt.Tx, w a2a.MLSWire, from did.DID) (drain.Opened, error) {
	if s.fail.Load() {
		b, err := tx.CreateBucketIfNotExists(bucketPartial)
		if err != nil {
			return drain.Opened{}, err
		}
		if err := b.Put([]byte("half"), []byte("written")); err != nil {
			return drain.Opened{}, err
		}
		if err := b.Put(make([]byte, bolt.MaxKeySize+1), []byte("x")); err != nil {
			return drain.Opened{}, fmt.Errorf("saving the group: %w", err)
		}
	}
	if s.drop != "" {
		if err := tx.Bucket([]byte("runtimetest-groups")).Delete([]byte(s.drop)); err != nil {
			return drain.Opened{}, err
		}
		return drain.Opened{}, &session.CorruptError{Group: []byte(s.drop), Field: "state", Err: errors.New("checksum mismatch"), Dropped: true}
	}
	return s.Sessions.Open(tx, w, from)
}

// TestSessionsStoreFailureAbortsTheBatch: a bbolt write failing inside
// Sessions.Open aborts the whole batch: rolled back (the half-written
// change, the Welcome before it and the replay entry of an object accepted
// before it), nothing acknowledged or delivered, an error wrapping
// ErrStore; not a rejected record. The same records drain in full once the
// store works again.
func TestSessionsStoreFailureAbortsTheBatch(t *testing.T) {
	h := newHarness(t, opts{plaintext: true})
	fail := new(atomic.Bool)
	h.cfg.Sessions = failpointSessions{fail: fail}
	h.restart()
	valid := h.obj(h.alice, "comms:message", t0, time.Hour, nil)
	sealed := h.obj(h.alice, "comms:message", t0, time.Hour, nil)
	recs := []drain.Record{
		{Seq: 1, Body: runtimetest.Body(t, runtimetest.DataPart(t, valid))},
		{Seq: 2, Body: runtimetest.Body(t, runtimetest.Welcome("g", h.bob.DID()))},
		{Seq: 3, Body: runtimetest.Body(t, runtimetest.SealObject("g", h.alice.DID(), sealed))},
	}
	fail.Store(true)
	rep, err := h.d.Batch(context.Background(), recs, h.ack)
	if !errors.Is(err, drain.ErrStore) || !errors.Is(err, berrors.ErrKeyTooLarge) || !drain.StoreFailure(err) {
		t.Fatalf("Batch with a failing session write: err = %v; want ErrStore wrapping bbolt's error", err)
	}
	if len(h.acked) != 0 || len(h.rec.IDs()) != 0 || rep.RejectedTotal() != 0 || rep.Acked != 0 {
		t.Fatalf("acked %v, delivered %v, report %v: want nothing acknowledged, delivered or rejected", h.acked, h.rec.IDs(), rep)
	}
	h.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketPartial) != nil {
			t.Error("the half-written change was committed")
		}
		if _, ok := runtimetest.Epoch(tx, "g"); ok {
			t.Error("the Welcome of the rolled-back batch stayed applied")
		}
		return nil
	})

	fail.Store(false) // the next wake: the store works again
	rep, err = h.d.Batch(context.Background(), recs, h.ack)
	if err != nil || rep.Accepted != 2 || rep.RejectedTotal() != 0 || len(h.acked) != 3 {
		t.Fatalf("the same batch again = %v, %v (acked %v); want both objects accepted, none a replay, 3 acked", rep, err, h.acked)
	}
	if got := h.rec.IDs(); len(got) != 2 || got[0] != runtimetest.ObjectID(t, valid) || got[1] != runtimetest.ObjectID(t, sealed) {
		t.Fatalf("delivered %v, want the two objects once", got)
	}
}

// TestDroppedSessionCommitsWithTheBatch: a session dropped on purpose
// (stored state corrupt, package session fails closed) is the message's
// error: the record is rejected and acknowledged, the deletion commits
// with the rest of the batch.
func TestDroppedSessionCommitsWithTheBatch(t *testing.T) {
	h := newHarness(t, opts{plaintext: true})
	h.batch(runtimetest.Body(t, runtimetest.Welcome("g", h.bob.DID())))
	h.cfg.Sessions = failpointSessions{fail: new(atomic.Bool), drop: "g"}
	h.restart()
	h.acked = nil
	valid := h.obj(h.alice, "comms:message", t0, time.Hour, nil)
	rep := h.batch(
		runtimetest.Body(t, runtimetest.SealObject("g", h.alice.DID(), h.obj(h.alice, "comms:message", t0, time.Hour, nil))),
		runtimetest.Body(t, runtimetest.DataPart(t, valid)),
	)
	if rep.Rejected[drain.CauseMLS] != 1 || rep.Acked != 2 || len(h.acked) != 2 {
		t.Fatalf("report %v, acked %v: want the MLS record rejected and both acknowledged", rep, h.acked)
	}
	if got := h.rec.IDs(); len(got) != 1 || got[0] != runtimetest.ObjectID(t, valid) {
		t.Fatalf("delivered %v, want the plaintext object", got)
	}
	h.db.View(func(tx *bolt.Tx) error {
		if _, ok := runtimetest.Epoch(tx, "g"); ok {
			t.Error("the corrupt session was not dropped: its deletion did not commit with the batch")
		}
		return nil
	})
}
