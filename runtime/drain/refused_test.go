package drain_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// TestRefusedRecordsAreAcknowledged: a record the device judged and
// refused (not JSON, not JSON-RPC, a duplicate member, nested too deep,
// another method, a purpose outside the allowlist) is acknowledged, so
// the relay deletes it, and reported with its cause; it never stays queued
// to come back at every wake.
func TestRefusedRecordsAreAcknowledged(t *testing.T) {
	h := newHarness(t, opts{plaintext: true})
	// One level deeper than the reader the relay and the device share
	// allows (the params object is the second level).
	deep := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"x":` + strings.Repeat("[", a2a.MaxDepth-1) + strings.Repeat("]", a2a.MaxDepth-1) + `}}`
	bodies := [][]byte{
		[]byte("not json at all"),
		[]byte(`[1,2,3]`),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"message/send","method":"tasks/get","params":{}}`),
		[]byte(deep),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{}}`),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user","role":"agent","parts":[]}}}`),
		[]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`),
		runtimetest.Body(t, runtimetest.DataPart(t, h.obj(h.alice, "coordination:proposal", t0, time.Hour, nil))),
	}
	rep := h.batch(bodies...)
	if rep.Acked != len(bodies) || rep.Deferred != 0 || len(h.acked) != len(bodies) {
		t.Fatalf("report %v, acked %v: want all %d records acknowledged, none deferred", rep, h.acked, len(bodies))
	}
	if rep.Rejected[drain.CauseOpaque] != 7 || rep.Rejected["purpose-not-permitted"] != 1 {
		t.Errorf("rejected %v: want opaque=7 purpose-not-permitted=1", rep.Rejected)
	}
	if len(rep.Diagnostics) != len(bodies) {
		t.Fatalf("diagnostics %v: want one per record", rep.Diagnostics)
	}
	if d := rep.Diagnostics[2]; d.Cause != drain.CauseOpaque || !strings.Contains(d.Detail, "duplicate member") {
		t.Errorf("duplicate member diagnostic %+v: want its cause named", d)
	}
	if len(h.rec.IDs()) != 0 {
		t.Errorf("refused records delivered %v", h.rec.IDs())
	}
}

// TestDeferredRecordIsNotAcknowledged: an MLS message for a group the
// device has not joined yet may succeed later: it stays queued.
func TestDeferredRecordIsNotAcknowledged(t *testing.T) {
	h := newHarness(t, opts{})
	rep := h.batch(runtimetest.Body(t, runtimetest.SealObject("g9", h.alice.DID(), h.obj(h.alice, "comms:message", t0, time.Hour, nil))))
	if rep.Deferred != 1 || rep.Acked != 0 || len(h.acked) != 0 {
		t.Fatalf("report %v, acked %v: want the record deferred, not acknowledged", rep, h.acked)
	}
}

// TestFailedHandOffIsCountedAndReported: an accepted object whose handler
// fails is counted and described in the report (logged at WARN by the
// runtime), in both notify modes; at-least-once keeps it for another
// attempt.
func TestFailedHandOffIsCountedAndReported(t *testing.T) {
	for _, mode := range []drain.NotifyMode{drain.AtMostOnce, drain.AtLeastOnce} {
		t.Run(mode.String(), func(t *testing.T) {
			h := newHarness(t, opts{plaintext: true, notify: mode})
			h.rec.FailWith(errors.New("handler down"))
			rep := h.batch(runtimetest.Body(t, runtimetest.DataPart(t, h.obj(h.alice, "comms:message", t0, time.Hour, nil))))
			if rep.Accepted != 1 || rep.Delivered != 0 || rep.HandOffFailed != 1 {
				t.Fatalf("report %v: want accepted 1, delivered 0, handOffFailed 1", rep)
			}
			var d *drain.Diagnostic
			for i := range rep.Diagnostics {
				if rep.Diagnostics[i].Cause == drain.CauseHandOff {
					d = &rep.Diagnostics[i]
				}
			}
			want := "not handed over again"
			if mode == drain.AtLeastOnce {
				want = "kept for another attempt"
			}
			if d == nil || !strings.Contains(d.Detail, "handler down") || !strings.Contains(d.Detail, want) {
				t.Fatalf("diagnostics %+v: want a %s one naming the error and %q", rep.Diagnostics, drain.CauseHandOff, want)
			}
			if !strings.Contains(rep.String(), "handOffFailed=1") {
				t.Errorf("summary %q does not count the failed hand-off", rep.String())
			}
		})
	}
}

// errNotStarted is a hand-off failure the application certainly did not see.
var errNotStarted = fmt.Errorf("deliver: starting /opt/app/handler: no such file (%w)", deliver.ErrNotStarted)

// TestNotStartedHandOffIsKeptAtMostOnce: with at-most-once notify, a
// hand-off that certainly did not start (the handler program is missing)
// is kept and handed over at the next wake's Recover, once the handler is
// back, and only once.
func TestNotStartedHandOffIsKeptAtMostOnce(t *testing.T) {
	h := newHarness(t, opts{plaintext: true})
	h.rec.FailWith(errNotStarted)
	obj := h.obj(h.alice, "comms:message", t0, time.Hour, nil)
	rep := h.batch(runtimetest.Body(t, runtimetest.DataPart(t, obj)))
	if rep.HandOffFailed != 1 || !strings.Contains(rep.Diagnostics[0].Detail, "certainly did not receive it") {
		t.Fatalf("report %v %+v: want the hand-off failure, kept", rep, rep.Diagnostics)
	}
	rec, err := h.d.Recover(context.Background()) // the handler still down
	if err != nil || rec.Failed != 1 || rec.Lost != 0 {
		t.Fatalf("Recover with the handler down: %+v, %v; want failed 1, nothing lost", rec, err)
	}
	h.rec.FailWith(nil)
	rec, err = h.d.Recover(context.Background())
	if err != nil || rec.Redelivered != 1 || len(h.rec.IDs()) != 1 || h.rec.IDs()[0] != runtimetest.ObjectID(t, obj) {
		t.Fatalf("Recover with the handler back: %+v, %v, delivered %v; want the object once", rec, err, h.rec.IDs())
	}
	if rec, _ := h.d.Recover(context.Background()); rec != (drain.Recovery{}) || len(h.rec.IDs()) != 1 {
		t.Fatalf("a third Recover: %+v, delivered %v; want nothing more", rec, h.rec.IDs())
	}
}

// TestNotStartedRetryCutByACrashIsNotRepeated: with at-most-once notify,
// a crash while the kept hand-off is repeated leaves it reported lost,
// never handed over a second time.
func TestNotStartedRetryCutByACrashIsNotRepeated(t *testing.T) {
	h := newHarness(t, opts{plaintext: true})
	h.rec.FailWith(errNotStarted)
	h.batch(runtimetest.Body(t, runtimetest.DataPart(t, h.obj(h.alice, "comms:message", t0, time.Hour, nil))))
	h.rec.FailWith(nil)
	snap := filepath.Join(t.TempDir(), "crashed.db")
	h.rec.OnDeliver(func(deliver.Delivery) { // the disk as a crash during the hand-off leaves it
		if err := h.db.View(func(tx *bolt.Tx) error { return tx.CopyFile(snap, 0o600) }); err != nil {
			t.Error(err)
		}
	})
	if rec, err := h.d.Recover(context.Background()); err != nil || rec.Redelivered != 1 {
		t.Fatalf("Recover: %+v, %v", rec, err)
	}
	h.rec.OnDeliver(nil)
	h.d.Close()
	h.db.Close()
	h.path = snap
	h.open()
	rec, err := h.d.Recover(context.Background())
	if err != nil || rec.Lost != 1 || rec.Redelivered != 0 || len(h.rec.IDs()) != 1 {
		t.Fatalf("Recover after the crash: %+v, %v, delivered %v; want it lost, delivered once in all", rec, err, h.rec.IDs())
	}
}
