package drain_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/gate"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/runtime/trusted"
)

// unsynced is a kernel with no NTP sync and no RTC, as on a Raspberry Pi
// 1–4 just after boot.
type unsynced struct{}

func (unsynced) NTP() (trusted.NTPState, error) { return trusted.NTPState{}, nil }
func (unsynced) RTC(string) (time.Time, error)  { return time.Time{}, errors.New("no RTC") }
func (unsynced) Boot() (trusted.Boot, error) {
	return trusted.Boot{ID: "boot", Since: time.Minute}, nil
}

// trustedHourBehind sets the device's clock an hour behind truth and
// restarts the drain with its expiry judged by a trusted clock over the
// device's state (no synchronised kernel clock), which it returns.
func (h *harness) trustedHourBehind(t *testing.T, truth time.Time) *trusted.Clock {
	t.Helper()
	h.clock.Set(truth.Add(-time.Hour))
	tc, err := trusted.Open(h.db, trusted.Config{Clock: h.clock, Kernel: unsynced{}})
	if err != nil {
		t.Fatal(err)
	}
	h.cfg.Expiry = tc
	h.restart()
	return tc
}

// TestDrainJudgesByTrustedTime: the device's clock is an hour behind (a
// Pi booted with fake-hwclock's time). Without trusted time the batch is
// held: nothing judged, nothing acknowledged, and the report says why.
// With the relay's time from the handshake the object that expired 30
// minutes ago is refused as expired and the valid one delivered; the time
// judged by is committed as the floor.
func TestDrainJudgesByTrustedTime(t *testing.T) {
	truth := t0
	h := newHarness(t, opts{plaintext: true})
	tc := h.trustedHourBehind(t, truth)
	expired := h.obj(h.alice, "comms:message", truth.Add(-2*time.Hour), 90*time.Minute, nil)
	valid := h.obj(h.alice, "comms:message", truth.Add(-10*time.Minute), time.Hour, nil)
	recs := []drain.Record{
		{Seq: 1, From: h.alice.DID().String(), Body: runtimetest.Body(t, runtimetest.DataPart(t, expired))},
		{Seq: 2, From: h.alice.DID().String(), Body: runtimetest.Body(t, runtimetest.DataPart(t, valid))},
	}
	rep, err := h.d.Batch(context.Background(), recs, h.ack)
	if !errors.Is(err, drain.ErrUntrusted) || !errors.Is(err, trusted.ErrUntrusted) {
		t.Fatalf("Batch without trusted time: %v, want ErrUntrusted", err)
	}
	if len(h.acked) != 0 || len(h.rec.IDs()) != 0 || rep.Objects != 0 || rep.Deferred != 2 {
		t.Fatalf("held batch: acked %v, delivered %v, report %v; want nothing judged, 2 deferred", h.acked, h.rec.IDs(), rep)
	}
	if len(rep.Diagnostics) != 1 || rep.Diagnostics[0].Cause != drain.CauseUntrusted || rep.Diagnostics[0].Seq != 1 {
		t.Errorf("diagnostics %+v, want one %s naming seq 1", rep.Diagnostics, drain.CauseUntrusted)
	}

	tc.SetRelay(truth, h.clock.Now())
	rep, err = h.d.Batch(context.Background(), recs, h.ack)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{runtimetest.ObjectID(t, valid)}, h.rec.IDs()); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
	if rep.Rejected["expired"] != 1 || len(h.acked) != 2 {
		t.Errorf("report %v, acked %v: want the expired object rejected and both acknowledged", rep, h.acked)
	}
	again, err := trusted.Open(h.db, trusted.Config{Clock: h.clock, Kernel: unsynced{}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := again.Establish(); !r.Floor.Equal(truth) {
		t.Errorf("floor after the batch %v, want the time it judged by, %v", r.Floor, truth)
	}
}

// TestHeldActionsJudgedByTrustedTime: the device's clock is an hour
// behind and the relay's time is trusted. An action held for the owner
// expires; judged by the trusted time, the owner's confirmation is
// refused as expired and Redecide drops the hold. By the device's clock
// (as before) it still had 50 minutes, and both ran or kept it.
func TestHeldActionsJudgedByTrustedTime(t *testing.T) {
	truth := t0
	h := newHarness(t, opts{plaintext: true})
	tc := h.trustedHourBehind(t, truth)
	tc.SetRelay(truth, h.clock.Now())
	h.policy()
	capture := h.obj(h.alice, "action:capture", truth.Add(-10*time.Minute), 20*time.Minute, map[string]any{"amount": 5})
	if rep := h.batch(runtimetest.Body(t, runtimetest.DataPart(t, capture))); rep.Held != 1 {
		t.Fatalf("report %v, want the capture held", rep)
	}
	key := h.alice.DID().String() + " " + runtimetest.ObjectID(t, capture)
	h.clock.Advance(15 * time.Minute) // trusted: 5 min past the expiry; the device's clock: 45 min before it
	if _, err := h.d.Confirm(context.Background(), key); !errors.Is(err, gate.ErrExpired) {
		t.Fatalf("Confirm after the expiry by trusted time: %v, want ErrExpired", err)
	}
	if _, err := h.d.Redecide(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.wantHolds(map[string]string{})
	if len(h.rec.IDs()) != 0 {
		t.Errorf("delivered %v, want nothing", h.rec.IDs())
	}
}
