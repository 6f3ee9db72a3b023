package runtime_test

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/wake"
)

// TestRestartAfterAMissedWake: an agent powered off while it slept starts
// again from its bbolt file, with the wall clock before, in, or past its
// planned window. It wakes at once, in every case: a start inside a window
// stays live to that window's end; outside one, it publishes and drains,
// then sleeps to the next window the wall clock gives, never to the wake it
// missed. It logs how late it came back only when it missed the planned
// wake, and its pulse chain continues from the store.
func TestRestartAfterAMissedWake(t *testing.T) {
	for _, tt := range restartCases {
		t.Run(tt.name, func(t *testing.T) {
			off := powerOffAsleep(t)
			w, now := off.w, tt.at(off.planned)
			var log runtimetest.Log
			r, start := restartAt(t, w, now, &log, tt.inWindow)
			checkMissedWakeLog(t, log.String(), off.planned, now, tt.late)

			// The pulse chain continues from bbolt, and its new head names
			// the next wake.
			_, doc := w.served()
			w.checkPulse("after the restart", doc, r, wake.HourlyWake)
			if err := pulse.VerifyNext(off.pulse1, doc); err != nil {
				t.Errorf("pulse after the restart does not follow the one before: %v", err)
			}

			checkRTCArmedFor(t, w, off.rtc, start)
		})
	}
}

// restartCase is one start of the agent after the power-off.
type restartCase struct {
	name string
	// at is when the agent starts again, from the window it planned
	// before the power-off.
	at       func(planned time.Time) time.Time
	inWindow bool
	late     bool
}

var restartCases = []restartCase{
	{"before the planned wake", func(p time.Time) time.Time { return p.Add(-time.Minute / 2) }, false, false},
	{"in a later window", func(p time.Time) time.Time { return p.Add(3*time.Hour + 2*time.Minute) }, true, true},
	{"between windows", func(p time.Time) time.Time { return p.Add(3*time.Hour + 20*time.Minute) }, false, true},
}

// poweredOff is an agent's world after it booted, planned its next wake
// and was powered off asleep.
type poweredOff struct {
	w       *world
	rtc     *suspendSource
	planned time.Time // the wake it planned before the power-off
	pulse1  []byte    // the card served before the power-off
}

// powerOffAsleep boots an agent with an RTC wake source outside its window
// (at t0), checks it planned the next window, and shuts it down once it
// sleeps.
func powerOffAsleep(t *testing.T) poweredOff {
	t.Helper()
	w := newWorld(t, wake.HourlyWake)
	rtc, first := w.bootSuspending() // boot, outside the window (t0)
	planned := first.NextWake
	if start, _ := w.window.Next(t0); !planned.Equal(start) {
		t.Fatalf("boot wake planned %v, want the window at %v", planned, start)
	}
	_, pulse1 := w.served()
	<-rtc.asleep
	w.shutdown() // powered off, asleep
	return poweredOff{w: w, rtc: rtc, planned: planned, pulse1: pulse1}
}

// restartAt starts the agent again at now, logging to log, checks its boot
// wake, staying live to the window's end when inWindow, and returns that
// wake's report and the window it plans next.
func restartAt(t *testing.T, w *world, now time.Time, log *runtimetest.Log, inWindow bool) (runtime.WakeReport, time.Time) {
	t.Helper()
	w.clock.Set(now)
	w.cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
	w.newAgent()
	w.run()
	start, end := w.window.Next(now)
	if inWindow {
		w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
		w.clock.Set(end)
	}
	r := w.nextWake()
	if inWindow {
		if !r.At.Equal(now) || !r.End.Equal(end) || r.Awake != end.Sub(now) {
			t.Errorf("restart in a window: wake at %v to %v, awake %v; want at %v to the window's end %v", r.At, r.End, r.Awake, now, end)
		}
		start, _ = w.window.Next(end)
	} else if !r.At.Equal(now) || r.Awake != 0 || !r.End.Equal(now.Add(w.window.Length)) {
		t.Errorf("restart outside a window: wake at %v to %v, awake %v; want a short wake at %v", r.At, r.End, r.Awake, now)
	}
	if r.Reason != "boot" || !r.NextWake.Equal(start) {
		t.Errorf("restart: reason %s, next wake %v; want boot and the window at %v from the wall clock", r.Reason, r.NextWake, start)
	}
	return r, start
}

// checkMissedWakeLog checks the log of a restart at now: missed or not, it
// says so, naming the wake planned before the power-off and how late the
// agent came back.
func checkMissedWakeLog(t *testing.T, log string, planned, now time.Time, late bool) {
	t.Helper()
	missed := "resumed after the planned wake"
	logged := strings.Contains(log, missed)
	want := "plannedWake=" + planned.UTC().Format(time.RFC3339) + " late=" + now.Sub(planned).String()
	if late && (!logged || !strings.Contains(log, want)) {
		t.Errorf("log after a missed wake does not say %q with %q:\n%s", missed, want, log)
	}
	if !late && logged {
		t.Errorf("log after a restart before the planned wake says %q:\n%s", missed, log)
	}
}

// checkRTCArmedFor checks that, asleep after the restart, the agent armed
// rtc for start, the window the wall clock gave, not for the wake it
// missed; then shuts it down and checks the store kept that wake as the
// last one.
func checkRTCArmedFor(t *testing.T, w *world, rtc *suspendSource, start time.Time) {
	t.Helper()
	<-rtc.asleep
	// the alarm fires when it was armed for
	if r := w.alarmWake(rtc, start); r.Reason != "rtc" || !r.At.Equal(start) {
		t.Errorf("wake after the restart: %s at %v, want the RTC armed for %v", r.Reason, r.At, start)
	}
	w.shutdown()

	// The store kept the restart's cycle: the last wake recorded is
	// the one after it.
	db, err := bolt.Open(filepath.Join(w.cfg.Store.DataDir, runtime.DBFile), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		last, ok, err := runtime.LastWake(tx)
		if err != nil || !ok || !last.At.Equal(start) || last.Reason != "rtc" {
			t.Errorf("last wake in bbolt: %+v, %v, %v; want the RTC's at %v", last, ok, err, start)
		}
		return nil
	})
}
