package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/internal/version"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
)

// TestWakePublishesSignedStatus: every wake's state carries a status the
// agent signed, which the relay keeps: the build, the board, this wake's
// reason and, from the second wake on, the previous wake with its phases.
func TestWakePublishesSignedStatus(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	w.cfg.Board = "qemu-virt"
	rtc, boot := w.bootSuspending()
	st := w.status()
	if st.Version != version.Get().Short() || st.Board != "qemu-virt" || st.Halted || st.HeldCount != 0 ||
		st.Wake == nil || st.Wake.Reason != "boot" || !st.Wake.At.Equal(boot.At) || st.LastWake != nil {
		t.Fatalf("status after the boot wake = %+v", st)
	}
	<-rtc.asleep
	rtc.wakeup <- struct{}{}
	w.waitPhases(runtime.PhasePublish)
	st = w.status()
	if st.Wake == nil || st.Wake.Reason != "rtc" || st.LastWake == nil || st.LastWake.Reason != "boot" ||
		st.LastWake.AwakeMs != boot.Awake.Milliseconds() || len(st.LastWake.Phases) != len(boot.Phases) {
		t.Fatalf("status in the window's wake = %+v; want this wake rtc and the boot wake (%d phases) before it", st, len(boot.Phases))
	}
	w.shutdown()
}

// status is the agent's status as the relay keeps it, verified.
func (w *world) status() wire.Status {
	w.t.Helper()
	s, err := w.states.Get(context.Background(), w.key.DID().String())
	if err != nil {
		w.t.Fatal(err)
	}
	st, err := relay.ParseStatus(s.Status, w.key.DID())
	if err != nil {
		w.t.Fatalf("the relay keeps no valid status: %v", err)
	}
	return st
}

// TestStatusReportsHeldActions: an action held for the owner during a
// window is in the status the wake publishes when it announces its next
// wake, with the key torporctl device confirm takes.
func TestStatusReportsHeldActions(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	w.cfg.Purposes, w.cfg.Consequential = purpose.Set{"comms:*", "action:*"}, purpose.Set{"action:*"}
	w.cfg.Owner = runtimetest.Key(t, 9).DID()
	rtc, _ := w.bootSuspending()
	alice := runtimetest.Key(t, 1)
	w.send(alice, runtimetest.Object(t, alice, "action:open-valve", t0, 2*time.Hour, map[string]any{"idempotencyKey": "valve-7"}))
	<-rtc.asleep
	w.alarmWake(rtc, t0)
	st := w.status()
	if st.HeldCount != 1 || len(st.Held) != 1 || st.Held[0].Key != alice.DID().String()+" valve-7" || st.Held[0].Purpose != "action:open-valve" {
		t.Fatalf("status after the window: held %d %+v; want the valve action", st.HeldCount, st.Held)
	}
	w.shutdown()
}
