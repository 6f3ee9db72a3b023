package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// fillMinute stores, as the relay's agent records, an agent at every
// second of the device's wake minute but free: the seconds other devices
// were assigned (before a restart, or by another relay).
func (w *world) fillMinute(free int) {
	w.t.Helper()
	for sec := range 60 {
		if sec == free {
			continue
		}
		st := agents.State{Mode: wake.HourlyWake, Window: wake.Window{Minute: w.window.Minute}, WakeSecond: sec, WakeSecondSet: true, UpdatedAt: t0}
		if err := w.states.Put(context.Background(), fmt.Sprintf("did:key:zFill%d", sec), st, nil, nil); err != nil {
			w.t.Fatal(err)
		}
	}
}

// checkAsleepAt checks that the relay's window for the agent, the next
// wake r announced and the served pulse's next wake open at want's next
// window, and that every Retry-After of an asleep answer lands inside it.
func (w *world) checkAsleepAt(want wake.Window, r runtime.WakeReport) {
	w.t.Helper()
	st, err := w.states.Get(context.Background(), w.key.DID().String())
	if err != nil {
		w.t.Fatal(err)
	}
	now := w.clock.Now()
	start, end := want.Next(now)
	if got, gotEnd := st.Window.Next(now); !got.Equal(start) || !gotEnd.Equal(end) {
		w.t.Errorf("relay's window %+v: next %s..%s, want %s..%s", st.Window, got, gotEnd, start, end)
	}
	if !r.NextWake.Equal(start) {
		w.t.Errorf("announced next wake %s, want %s (second %d)", r.NextWake, start, want.Second)
	}
	_, doc := w.served()
	w.checkPulse("asleep", doc, r, wake.HourlyWake)
	alice := runtimetest.Key(w.t, 1)
	for range 20 {
		code, ra := w.send(alice, runtimetest.Object(w.t, alice, "comms:message", now, time.Hour, nil))
		if at := now.Add(time.Duration(ra) * time.Second); code != 503 || at.Before(start) || !at.Before(end) {
			w.t.Fatalf("asleep answer %d, Retry-After %d s: %s, outside %s..%s", code, ra, at, start, end)
		}
	}
}

// forgetfulLink is a link to a relay that assigns no wake seconds (it
// predates them): its state-ok names none.
type forgetfulLink struct{ runtime.Link }

func (l forgetfulLink) Publish(ctx context.Context, st wire.State) (wire.Accepted, error) {
	ok, err := l.Link.Publish(ctx, st)
	ok.WakeSecond = nil
	return ok, err
}

// TestRelayAssignsTheWakeSecond: the relay assigns the device the only
// free second of its wake minute at its first state; the device keeps it
// (also across a restart, with a relay that no longer says it), wakes
// there, and publishes it, so that the relay's window, its Retry-After and
// the card's next window point at the assigned second.
func TestRelayAssignsTheWakeSecond(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	free := (w.window.Second + 17) % 60
	w.fillMinute(free)
	assigned := w.window
	assigned.Second = free
	w.run()
	r := w.nextWake() // boot: assigned, announced at the end of the wake
	if st, err := w.states.Get(context.Background(), w.key.DID().String()); err != nil || !st.WakeSecondSet || st.WakeSecond != free {
		t.Fatalf("relay's record: wake second %d (set %v), %v; want %d", st.WakeSecond, st.WakeSecondSet, err, free)
	}
	if got := w.agent.Window(); got != assigned {
		t.Errorf("agent's window %+v, want %+v", got, assigned)
	}
	w.checkAsleepAt(assigned, r)
	w.shutdown()

	w.cfg.Hooks.Dial = func(ctx context.Context, c link.Config) (runtime.Link, error) {
		l, err := link.Dial(ctx, c)
		if err != nil {
			return nil, err
		}
		return forgetfulLink{l}, nil
	}
	w.newAgent()
	w.run()
	r = w.nextWake() // boot again: the kept second, though the relay says none
	w.checkAsleepAt(assigned, r)
	w.shutdown()
}
