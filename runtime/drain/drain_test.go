package drain_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/gate"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/ledger"
	"github.com/torpor-dev/torpor/store/replay"
	"github.com/torpor-dev/torpor/transport/a2a"
)

var t0 = time.Date(2026, 1, 15, 14, 0, 0, 0, time.UTC)

// newRecorder returns the application the harness hands objects to; its
// answers name an effect after the object.
func newRecorder() *deliver.Recorder {
	r := &deliver.Recorder{}
	r.AnswerWith(func(d deliver.Delivery) deliver.Outcome {
		return deliver.Outcome{OK: true, EffectID: "eff-" + d.ObjectID}
	})
	return r
}

type harness struct {
	t            testing.TB
	path         string
	clock        *clocktest.Clock
	db           *bolt.DB
	ledger       *ledger.Ledger
	gate         *gate.Gate
	d            *drain.Drainer
	rec          *deliver.Recorder
	cfg          drain.Config
	alice, bob   *did.PrivateKey
	owner, agent *did.PrivateKey
	acked        []uint64
}

type opts struct {
	plaintext bool
	notify    drain.NotifyMode
}

func newHarness(t testing.TB, o opts) *harness {
	t.Helper()
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "agent.db"), clock: clocktest.New(t0), rec: newRecorder(),
		alice: runtimetest.Key(t, 1), bob: runtimetest.Key(t, 2), owner: runtimetest.Key(t, 9), agent: runtimetest.Key(t, 8)}
	h.cfg = drain.Config{
		Accept:   drain.Accept{Owner: h.owner.DID(), Purposes: purpose.Set{"comms:*", "action:*"}, AllowPlaintext: o.plaintext},
		Sessions: runtimetest.Sessions{}, Notify: o.notify, Clock: h.clock,
	}
	h.open()
	t.Cleanup(func() { h.db.Close() })
	return h
}

// open opens (or reopens, as after a crash) every store and the drainer.
func (h *harness) open() {
	h.t.Helper()
	db, err := store.Open(h.path, &store.Options{NoSync: true})
	if err != nil {
		h.t.Fatal(err)
	}
	l, err := ledger.Open(db, &ledger.Options{Clock: h.clock})
	if err != nil {
		h.t.Fatal(err)
	}
	g, err := gate.Open(l, gate.Config{Owner: h.owner.DID(), Agent: h.agent.DID(), Consequential: purpose.Set{"action:*"}, Clock: h.clock})
	if err != nil {
		h.t.Fatal(err)
	}
	rc, err := replay.Open(db, &replay.Options{Clock: h.clock})
	if err != nil {
		h.t.Fatal(err)
	}
	router, err := deliver.NewRouter(deliver.Route{Pattern: "*", Name: "rec", Handler: h.rec})
	if err != nil {
		h.t.Fatal(err)
	}
	cfg := h.cfg
	cfg.Gate, cfg.Ledger, cfg.Router = g, l, router
	cfg.Replay = func(tx *bolt.Tx) governed.ReplayCache { return rc.Tx(tx) }
	d, err := drain.New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.db, h.ledger, h.gate, h.d = db, l, g, d
}

func (h *harness) restart() {
	h.t.Helper()
	h.d.Close()
	if err := h.db.Close(); err != nil {
		h.t.Fatal(err)
	}
	h.open()
}

func (h *harness) ack(_ context.Context, seqs []uint64) error {
	h.acked = append(h.acked, seqs...)
	return nil
}

func (h *harness) batch(bodies ...[]byte) drain.Report {
	h.t.Helper()
	recs := make([]drain.Record, len(bodies))
	for i, b := range bodies {
		recs[i] = drain.Record{Seq: uint64(i + 1), From: h.alice.DID().String(), Body: b}
	}
	rep, err := h.d.Batch(context.Background(), recs, h.ack)
	if err != nil {
		h.t.Fatalf("Batch: %v", err)
	}
	return rep
}

func (h *harness) obj(k *did.PrivateKey, p string, issued time.Time, ttl time.Duration, payload any) []byte {
	return runtimetest.Object(h.t, k, p, issued, ttl, payload)
}

func TestDrainMixedBatch(t *testing.T) {
	h := newHarness(t, opts{plaintext: true})
	m := newMixedBatch(t, h)
	rep := h.batch(m.bodies...)
	if diff := cmp.Diff(m.delivered, h.rec.IDs()); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
	wantRejected := map[string]int{
		"signature-invalid": 1, "expired": 1, "replay": 1, "purpose-not-permitted": 1,
		drain.CauseNoObject: 1, "media-type-conflict": 1, "sender-mismatch": 1, drain.CauseMLS: 1,
		drain.CauseOpaque: 1,
	}
	if diff := cmp.Diff(wantRejected, rep.Rejected); diff != "" {
		t.Errorf("rejections by cause (-want +got):\n%s", diff)
	}
	if rep.Deferred != 1 || rep.Acked != 15 || rep.Handshake != 2 || rep.Delivered != 4 {
		t.Errorf("report %v: want deferred 1, acked 15, handshake 2, delivered 4", rep)
	}
	if diff := cmp.Diff([]uint64{1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16}, h.acked); diff != "" {
		t.Errorf("acked (-want +got):\n%s", diff)
	}
	checkMixedBatchStored(t, h, m.delivered[0])
	// The deferred record is processable once the group exists.
	h.acked = nil
	rep = h.batch(runtimetest.Body(t, runtimetest.SealObject("g1", h.alice.DID(), h.obj(h.alice, "comms:message", t0, time.Hour, nil))))
	if rep.Delivered != 1 || len(h.acked) != 1 {
		t.Errorf("after the welcome: %v", rep)
	}
}

// mixedBatch is a batch of sixteen records for TestDrainMixedBatch, and the
// IDs of the objects the drain must deliver from it, in order.
type mixedBatch struct {
	bodies    [][]byte
	delivered []string
}

// newMixedBatch makes the records of a mixed batch with h's keys: valid
// plaintext and MLS objects, each cause of rejection, records deferred
// until a Welcome, handshakes, and a bare object.
func newMixedBatch(t *testing.T, h *harness) mixedBatch {
	t.Helper()
	a, b := h.alice.DID(), h.bob.DID()
	valid := h.obj(h.alice, "comms:message", t0.Add(-time.Minute), time.Hour, nil)
	mlsValid := h.obj(h.alice, "comms:message", t0.Add(-time.Minute), time.Hour, nil)
	bobs := h.obj(h.bob, "comms:message", t0.Add(-time.Minute), time.Hour, nil)
	bare := h.obj(h.alice, "comms:receipt", t0.Add(-time.Minute), time.Hour, nil)
	conflict := runtimetest.DataPart(t, valid)
	conflict.MediaType = a2a.MediaTypeMLSWire
	text := "hi"
	bareBody, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send",
		"params": map[string]any{"message": map[string]any{"parts": []any{map[string]any{
			"mediaType": a2a.MediaTypeDataObject, "object": json.RawMessage(bare)}}}}})

	bodies := [][]byte{
		/*1*/ runtimetest.Body(t, runtimetest.DataPart(t, valid)),
		/*2*/ runtimetest.Body(t, runtimetest.DataPart(t, runtimetest.Tamper(h.obj(h.alice, "comms:message", t0, time.Hour, nil)))),
		/*3*/ runtimetest.Body(t, runtimetest.DataPart(t, h.obj(h.alice, "comms:message", t0.Add(-2*time.Hour), time.Hour, nil))),
		/*4*/ runtimetest.Body(t, runtimetest.DataPart(t, valid)), // replay within the batch
		/*5*/ runtimetest.Body(t, runtimetest.DataPart(t, h.obj(h.alice, "coordination:proposal", t0, time.Hour, nil))),
		/*6*/ []byte("not-a-governed-object"),
		/*7*/ runtimetest.Body(t, a2a.Part{Text: &text}),
		/*8*/ runtimetest.Body(t, conflict),
		/*9*/ runtimetest.Body(t, runtimetest.SealObject("g1", a, mlsValid)), // group not joined yet: deferred
		/*10*/ runtimetest.Body(t, runtimetest.Welcome("g1", b)),
		/*11*/ runtimetest.Body(t, runtimetest.SealObject("g1", a, mlsValid)),
		/*12*/ runtimetest.Body(t, runtimetest.SealObject("g1", b, h.obj(h.alice, "comms:message", t0, time.Hour, nil))), // Bob sends Alice's object
		/*13*/ runtimetest.Body(t, runtimetest.SealObject("g1", b, bobs)),
		/*14*/ runtimetest.Body(t, runtimetest.Corrupt("g1")),
		/*15*/ runtimetest.Body(t, runtimetest.Commit("g1")),
		/*16*/ bareBody,
	}
	return mixedBatch{
		bodies:    bodies,
		delivered: []string{runtimetest.ObjectID(t, valid), runtimetest.ObjectID(t, mlsValid), runtimetest.ObjectID(t, bobs), runtimetest.ObjectID(t, bare)},
	}
}

// checkMixedBatchStored checks what the mixed batch left in h's store: the
// commit applied to group g1, and four outcomes recorded, the first for
// the valid plaintext object validID, at sequence 1.
func checkMixedBatchStored(t *testing.T, h *harness, validID string) {
	t.Helper()
	h.db.View(func(tx *bolt.Tx) error {
		if e, ok := runtimetest.Epoch(tx, "g1"); !ok || e != 1 {
			t.Errorf("group g1 epoch = %d, %v; want 1 (the commit applied in the batch)", e, ok)
		}
		out, err := drain.Outcomes(tx)
		if err != nil || len(out) != 4 || out[0].Outcome.EffectID != "eff-"+validID || out[0].Seq != 1 {
			t.Errorf("recorded outcomes %+v, %v", out, err)
		}
		return nil
	})
}

func TestPlaintextNotAllowed(t *testing.T) {
	h := newHarness(t, opts{})
	rep := h.batch(runtimetest.Body(t, runtimetest.DataPart(t, h.obj(h.alice, "comms:message", t0, time.Hour, nil))))
	if rep.Rejected[drain.CausePlaintext] != 1 || rep.Acked != 1 || len(h.rec.IDs()) != 0 {
		t.Fatalf("unencrypted object with plaintext off: %v", rep)
	}
}

// TestRedeliveredBatchIsNotNotifiedTwice: the relay delivers a batch again
// when the acknowledgement was lost; every object is then a replay.
func TestRedeliveredBatchIsNotNotifiedTwice(t *testing.T) {
	h := newHarness(t, opts{})
	bodies := [][]byte{
		runtimetest.Body(t, runtimetest.Welcome("g", h.bob.DID())),
		runtimetest.Body(t, runtimetest.SealObject("g", h.alice.DID(), h.obj(h.alice, "comms:message", t0, time.Hour, nil))),
		runtimetest.Body(t, runtimetest.SealObject("g", h.alice.DID(), h.obj(h.alice, "comms:message", t0, time.Hour, nil))),
	}
	recs := []drain.Record{{Seq: 1, Body: bodies[0]}, {Seq: 2, Body: bodies[1]}, {Seq: 3, Body: bodies[2]}}
	lost := errors.New("link dropped")
	rep, err := h.d.Batch(context.Background(), recs, func(context.Context, []uint64) error { return lost })
	if !errors.Is(err, lost) || rep.Delivered != 2 {
		t.Fatalf("Batch with a lost ack = %v, %v; want the ack error and 2 deliveries", rep, err)
	}
	h.restart()
	rep, err = h.d.Batch(context.Background(), recs, h.ack)
	if err != nil || rep.Rejected["replay"] != 2 || rep.Delivered != 0 || len(h.acked) != 3 {
		t.Fatalf("redelivered batch = %v, %v; want 2 replays, nothing delivered, 3 acked", rep, err)
	}
	if len(h.rec.IDs()) != 2 {
		t.Fatalf("handler got %d objects, want 2", len(h.rec.IDs()))
	}
}

type failingReplay struct{}

func (failingReplay) Seen(string, string, time.Time) (bool, error) { return false, nil }
func (failingReplay) Admit(string, string, time.Time) error        { return store.ErrFull }

func TestStoreFailureAcknowledgesNothing(t *testing.T) {
	h := newHarness(t, opts{plaintext: true})
	h.cfg.Replay = nil
	cfg := h.cfg
	l, g := h.ledger, h.gate
	router, _ := deliver.NewRouter(deliver.Route{Pattern: "*", Name: "rec", Handler: h.rec})
	cfg.Gate, cfg.Ledger, cfg.Router = g, l, router
	cfg.Replay = func(*bolt.Tx) governed.ReplayCache { return failingReplay{} }
	d, err := drain.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	recs := []drain.Record{
		{Seq: 1, Body: runtimetest.Body(t, runtimetest.Welcome("g", h.bob.DID()))},
		{Seq: 2, Body: runtimetest.Body(t, runtimetest.DataPart(t, h.obj(h.alice, "comms:message", t0, time.Hour, nil)))},
	}
	_, err = d.Batch(context.Background(), recs, h.ack)
	if !errors.Is(err, store.ErrFull) {
		t.Fatalf("Batch with a failing store: err = %v, want store.ErrFull", err)
	}
	if len(h.acked) != 0 || len(h.rec.IDs()) != 0 {
		t.Fatalf("acked %v, delivered %v: want nothing", h.acked, h.rec.IDs())
	}
	h.db.View(func(tx *bolt.Tx) error {
		if _, ok := runtimetest.Epoch(tx, "g"); ok {
			t.Error("the handshake of a rolled-back batch stayed applied")
		}
		return nil
	})
}

// crashDuringNotify runs a batch whose handler stops the goroutine at its
// first hand-off, as a crash after the commit would, then reopens.
func crashDuringNotify(h *harness, recs []drain.Record) {
	h.t.Helper()
	h.rec.OnDeliver(func(deliver.Delivery) { runtime.Goexit() })
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.d.Batch(context.Background(), recs, h.ack)
	}()
	<-done
	h.rec.OnDeliver(nil)
	h.restart()
}

func TestCrashAfterCommitAtMostOnce(t *testing.T) {
	h := newHarness(t, opts{plaintext: true})
	o1 := h.obj(h.alice, "comms:message", t0, time.Hour, nil)
	o2 := h.obj(h.alice, "comms:message", t0, time.Hour, nil)
	recs := []drain.Record{
		{Seq: 1, Body: runtimetest.Body(t, runtimetest.DataPart(t, o1))},
		{Seq: 2, Body: runtimetest.Body(t, runtimetest.DataPart(t, o2))},
	}
	crashDuringNotify(h, recs)
	rec, err := h.d.Recover(context.Background())
	if err != nil || rec.Lost != 2 || rec.Redelivered != 0 {
		t.Fatalf("Recover = %+v, %v; want 2 lost, none redelivered", rec, err)
	}
	if rep, _ := h.d.Batch(context.Background(), recs, h.ack); rep.Rejected["replay"] != 2 || len(h.rec.IDs()) != 0 {
		t.Fatalf("after recovery the relay's redelivery = %v, handler got %v; want replays and nothing", rep, h.rec.IDs())
	}
	if rec, _ := h.d.Recover(context.Background()); rec != (drain.Recovery{}) {
		t.Fatalf("second Recover = %+v, want nothing", rec)
	}
	h.wantLost(lostWant{1, o1}, lostWant{2, o2})
}

// TestLostHandOffsSurviveAKilledRecovery: the wake that finds hand-offs a
// kill cut off (at-most-once notify) may itself be killed before it
// reports them; the ledger still has them after the next restart, with
// the hand-off's object, issuer, purpose and sequence number.
func TestLostHandOffsSurviveAKilledRecovery(t *testing.T) {
	h := newHarness(t, opts{plaintext: true})
	o := h.obj(h.alice, "comms:message", t0, time.Hour, nil)
	recs := []drain.Record{{Seq: 7, Body: runtimetest.Body(t, runtimetest.DataPart(t, o))}}
	crashDuringNotify(h, recs)
	if rec, err := h.d.Recover(context.Background()); err != nil || rec.Lost != 1 {
		t.Fatalf("Recover = %+v, %v; want 1 lost", rec, err)
	}
	h.restart() // killed before anything was reported
	if rec, _ := h.d.Recover(context.Background()); rec != (drain.Recovery{}) {
		t.Fatalf("Recover after the second kill = %+v, want nothing left in the outbox", rec)
	}
	h.wantLost(lostWant{7, o})
}

// lostWant is a hand-off wantLost expects: the record's sequence number
// and its object.
type lostWant struct {
	seq uint64
	obj []byte
}

// wantLost checks that the ledger keeps exactly want as possibly lost
// hand-offs from alice, in order, not yet logged.
func (h *harness) wantLost(want ...lostWant) {
	h.t.Helper()
	var s ledger.LostSummary
	if err := h.db.View(func(tx *bolt.Tx) (err error) { s, err = h.ledger.LostHandOffs(tx); return err }); err != nil {
		h.t.Fatal(err)
	}
	if len(s.Kept) != len(want) {
		h.t.Fatalf("the ledger keeps %d lost hand-offs %+v; want %d", len(s.Kept), s.Kept, len(want))
	}
	for i, w := range want {
		got := s.Kept[i]
		if got.Seq != w.seq || got.ObjectID != runtimetest.ObjectID(h.t, w.obj) || got.Issuer != h.alice.DID().String() ||
			got.Purpose != "comms:message" || got.Logged || got.RecordedAt.IsZero() {
			h.t.Errorf("lost hand-off %d = %+v; want seq %d, object %s from alice", i, got, w.seq, runtimetest.ObjectID(h.t, w.obj))
		}
	}
}

func TestCrashAfterCommitAtLeastOnce(t *testing.T) {
	h := newHarness(t, opts{plaintext: true, notify: drain.AtLeastOnce})
	o1 := h.obj(h.alice, "comms:message", t0, time.Hour, nil)
	o2 := h.obj(h.alice, "comms:message", t0, 10*time.Minute, nil)
	recs := []drain.Record{
		{Seq: 1, Body: runtimetest.Body(t, runtimetest.DataPart(t, o1))},
		{Seq: 2, Body: runtimetest.Body(t, runtimetest.DataPart(t, o2))},
	}
	crashDuringNotify(h, recs)
	// A failed hand-off stays for the next attempt.
	h.rec.FailWith(errors.New("application down"))
	rec, err := h.d.Recover(context.Background())
	if err != nil || rec.Failed != 2 {
		t.Fatalf("Recover with the application down = %+v, %v", rec, err)
	}
	h.rec.FailWith(nil)
	h.clock.Advance(20 * time.Minute) // o2 expired meanwhile
	rec, err = h.d.Recover(context.Background())
	if err != nil || rec.Redelivered != 1 || rec.Expired != 1 {
		t.Fatalf("Recover = %+v, %v; want 1 redelivered, 1 expired", rec, err)
	}
	got := h.rec.Got()
	if len(got) != 1 || got[0].ObjectID != runtimetest.ObjectID(t, o1) || got[0].Attempt != 3 {
		t.Fatalf("redelivered %+v; want o1 at attempt 3", got)
	}
	h.wantLost() // repeated, never reported lost
}

func (h *harness) policy() {
	h.t.Helper()
	o := h.obj(h.owner, gate.PurposePolicy, h.clock.Now(), 48*time.Hour, map[string]any{
		"agent": h.agent.DID().String(),
		"rules": []map[string]any{{"action": "action:hold", "counterparties": []string{h.alice.DID().String()}}},
	})
	if rep := h.batch(runtimetest.Body(h.t, runtimetest.DataPart(h.t, o))); rep.Control != 1 {
		h.t.Fatalf("installing policy: %v", rep)
	}
}

func TestActionsThroughTheGate(t *testing.T) {
	h := newHarness(t, opts{plaintext: true})
	h.policy()
	allowed := h.obj(h.alice, "action:hold", t0, time.Hour, map[string]any{"idempotencyKey": "order-1"})
	held := h.obj(h.alice, "action:capture", t0, time.Hour, map[string]any{"amount": 5})
	notOwner := h.obj(h.alice, gate.PurposeHalt, t0, time.Hour, map[string]any{})
	rep := h.batch(
		runtimetest.Body(t, runtimetest.DataPart(t, allowed)),
		runtimetest.Body(t, runtimetest.DataPart(t, held)),
		runtimetest.Body(t, runtimetest.DataPart(t, notOwner)),
		runtimetest.Body(t, runtimetest.DataPart(t, h.obj(h.alice, "action:hold", t0, time.Hour, map[string]any{"idempotencyKey": "order-1"}))),
	)
	if rep.Ran != 1 || rep.Held != 1 || rep.Refused != 1 || rep.Rejected["purpose-not-permitted"] != 1 {
		t.Fatalf("report %v: want ran 1, held 1, refused 1 (same idempotency key), a non-owner halt refused", rep)
	}
	if ids := h.rec.IDs(); len(ids) != 1 || ids[0] != runtimetest.ObjectID(t, allowed) || h.rec.Got()[0].IdempotencyKey != h.alice.DID().String()+" order-1" {
		t.Fatalf("handler got %+v", h.rec.Got())
	}
	h.db.View(func(tx *bolt.Tx) error {
		e, err := h.ledger.Get(tx, h.alice.DID().String()+" order-1")
		if err != nil || e.State != ledger.Completed || e.EffectID != "eff-"+runtimetest.ObjectID(t, allowed) {
			t.Errorf("ledger entry %+v, %v; want completed with the effect id", e, err)
		}
		return nil
	})
	// The owner confirms the held capture in a later batch.
	confirm := h.obj(h.owner, gate.PurposeConfirm, t0, time.Hour, map[string]any{"hold": h.alice.DID().String() + " " + runtimetest.ObjectID(t, held)})
	rep = h.batch(runtimetest.Body(t, runtimetest.DataPart(t, confirm)))
	if rep.Control != 1 || rep.Ran != 1 || len(h.rec.IDs()) != 2 || h.rec.IDs()[1] != runtimetest.ObjectID(t, held) {
		t.Fatalf("after confirmation: %v, handler got %v", rep, h.rec.IDs())
	}
}

func TestHaltInTheSameBatchStopsActionsNotYetStarted(t *testing.T) {
	h := newHarness(t, opts{plaintext: true})
	h.policy()
	action := h.obj(h.alice, "action:hold", t0, time.Hour, nil)
	halt := h.obj(h.owner, gate.PurposeHalt, t0, time.Hour, map[string]any{"note": "stop"})
	rep := h.batch(runtimetest.Body(t, runtimetest.DataPart(t, action)), runtimetest.Body(t, runtimetest.DataPart(t, halt)))
	if rep.Ran != 1 || rep.Control != 1 || len(h.rec.IDs()) != 0 {
		t.Fatalf("report %v, handler got %v: the halt must stop the action before it starts", rep, h.rec.IDs())
	}
	var holds []gate.Held
	h.db.View(func(tx *bolt.Tx) error { holds, _ = h.gate.Holds(tx); return nil })
	if len(holds) != 1 || holds[0].Reason != "halted" {
		t.Fatalf("holds %+v; want the action held as halted", holds)
	}
	resume := h.obj(h.owner, gate.PurposeResume, t0, time.Hour, map[string]any{})
	if rep := h.batch(runtimetest.Body(t, runtimetest.DataPart(t, resume))); rep.Ran != 1 || len(h.rec.IDs()) != 1 {
		t.Fatalf("after resume: %v, handler got %v", rep, h.rec.IDs())
	}
}

func TestHandlerOutcomesSettleTheLedger(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want ledger.State
	}{
		{"not started", deliver.ErrNotStarted, ledger.Released},
		{"may have run", errors.New("timeout"), ledger.Indeterminate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, opts{plaintext: true})
			h.policy()
			h.rec.FailWith(tt.err)
			a := h.obj(h.alice, "action:hold", t0, time.Hour, nil)
			h.batch(runtimetest.Body(t, runtimetest.DataPart(t, a)))
			h.db.View(func(tx *bolt.Tx) error {
				e, err := h.ledger.Get(tx, h.alice.DID().String()+" "+runtimetest.ObjectID(t, a))
				if err != nil || e.State != tt.want {
					t.Errorf("ledger state %v, %v; want %v", e.State, err, tt.want)
				}
				return nil
			})
		})
	}
}

// blocker is a handler whose deliveries block until their context ends.
type blocker struct{ started chan struct{} }

func (b *blocker) Deliver(ctx context.Context, d deliver.Delivery) (deliver.Outcome, error) {
	close(b.started)
	<-ctx.Done()
	return deliver.Outcome{}, ctx.Err()
}

// TestHaltCancelsEffectsInFlight: the owner's halt given directly (not in
// the queue) cancels an action that is running; its key becomes
// indeterminate, because the effect may have happened.
func TestHaltCancelsEffectsInFlight(t *testing.T) {
	h := newHarness(t, opts{plaintext: true})
	h.policy()
	b := &blocker{started: make(chan struct{})}
	router, _ := deliver.NewRouter(deliver.Route{Pattern: "*", Name: "block", Handler: b})
	cfg := h.cfg
	cfg.Gate, cfg.Ledger, cfg.Router = h.gate, h.ledger, router
	rc, _ := replay.Open(h.db, &replay.Options{Clock: h.clock})
	cfg.Replay = func(tx *bolt.Tx) governed.ReplayCache { return rc.Tx(tx) }
	d, err := drain.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := h.obj(h.alice, "action:hold", t0, time.Hour, nil)
	done := make(chan drain.Report, 1)
	go func() {
		rep, _ := d.Batch(context.Background(), []drain.Record{{Seq: 9, Body: runtimetest.Body(t, runtimetest.DataPart(t, a))}}, h.ack)
		done <- rep
	}()
	<-b.started
	if err := h.db.Update(func(tx *bolt.Tx) error { return h.gate.Halt(tx, "now") }); err != nil {
		t.Fatal(err)
	}
	d.Halt()
	if rep := <-done; rep.Ran != 1 {
		t.Fatalf("report %v", rep)
	}
	h.db.View(func(tx *bolt.Tx) error {
		e, err := h.ledger.Get(tx, h.alice.DID().String()+" "+runtimetest.ObjectID(t, a))
		if err != nil || e.State != ledger.Indeterminate {
			t.Errorf("ledger state %v, %v; want indeterminate", e.State, err)
		}
		return nil
	})
	// Later actions are held until resume.
	next := h.obj(h.alice, "action:hold", t0, time.Hour, nil)
	rep, err := d.Batch(context.Background(), []drain.Record{{Seq: 10, Body: runtimetest.Body(t, runtimetest.DataPart(t, next))}}, h.ack)
	if err != nil || rep.Held != 1 {
		t.Fatalf("after the halt: %v, %v; want held", rep, err)
	}
}

// txID returns the id of db's last committed write transaction.
func txID(t testing.TB, db *bolt.DB) int {
	t.Helper()
	var id int
	if err := db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestNothingToDoCommitsNothing: Recover with an empty outbox and Redecide
// with nothing held, which every wake runs, commit no transaction (each
// commit costs two fsyncs).
func TestNothingToDoCommitsNothing(t *testing.T) {
	h := newHarness(t, opts{})
	before := txID(t, h.db)
	if rec, err := h.d.Recover(context.Background()); err != nil || rec != (drain.Recovery{}) {
		t.Fatalf("Recover = %+v, %v", rec, err)
	}
	if r, err := h.d.Redecide(context.Background()); err != nil || r.Delivered != 0 {
		t.Fatalf("Redecide = %+v, %v", r, err)
	}
	if after := txID(t, h.db); after != before {
		t.Errorf("Recover and Redecide with nothing to do committed %d transactions", after-before)
	}
}

// TestDeferralBounded: a record for a group the agent never joins is
// deferred at DefaultMaxDeferrals-1 drains, across a restart (the count is
// in the bbolt file), and acknowledged and reported as undeliverable at
// the next; a record deferred once and then unlocked leaves no count.
func TestDeferralBounded(t *testing.T) {
	h := newHarness(t, opts{plaintext: true})
	never := runtimetest.Body(t, runtimetest.SealObject("never-joined", h.alice.DID(), h.obj(h.alice, "comms:message", t0, time.Hour, nil)))
	for i := 1; i < drain.DefaultMaxDeferrals; i++ {
		h.acked = nil
		if rep := h.batch(never); rep.Deferred != 1 || len(h.acked) != 0 {
			t.Fatalf("drain %d: %v, acked %v; want it deferred", i, rep, h.acked)
		}
		h.restart()
	}
	h.acked = nil
	rep := h.batch(never)
	if rep.Deferred != 0 || rep.Rejected[drain.CauseMLSUndeliverable] != 1 || len(h.acked) != 1 {
		t.Fatalf("drain %d: %v, acked %v; want it dropped as %s", drain.DefaultMaxDeferrals, rep, h.acked, drain.CauseMLSUndeliverable)
	}
	if !strings.Contains(fmt.Sprint(rep.Diagnostics), "no later record unlocked it") {
		t.Errorf("diagnostics %v do not say why", rep.Diagnostics)
	}
	h.acked = nil
	if rep := h.batch(never); rep.Deferred != 1 {
		t.Errorf("the same body again, as a new record: %v, want it deferred afresh", rep)
	}
}
