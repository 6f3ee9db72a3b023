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
	tests := []struct {
		name string
		// at is when the agent starts again, from the window it planned
		// before the power-off.
		at       func(planned time.Time) time.Time
		inWindow bool
		late     bool
	}{
		{"before the planned wake", func(p time.Time) time.Time { return p.Add(-time.Minute / 2) }, false, false},
		{"in a later window", func(p time.Time) time.Time { return p.Add(3*time.Hour + 2*time.Minute) }, true, true},
		{"between windows", func(p time.Time) time.Time { return p.Add(3*time.Hour + 20*time.Minute) }, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, wake.HourlyWake)
			rtc := &suspendSource{w: w, asleep: make(chan struct{}, 1), wakeup: make(chan struct{})}
			w.cfg.Sources = []wake.Source{rtc}
			w.newAgent()
			w.run()
			first := w.nextWake() // boot, outside the window (t0)
			planned := first.NextWake
			if start, _ := w.window.Next(t0); !planned.Equal(start) {
				t.Fatalf("boot wake planned %v, want the window at %v", planned, start)
			}
			_, pulse1 := w.served()
			<-rtc.asleep
			w.shutdown() // powered off, asleep

			now := tt.at(planned)
			w.clock.Set(now)
			var log runtimetest.Log
			w.cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
			w.newAgent()
			w.run()
			start, end := w.window.Next(now)
			if tt.inWindow {
				w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
				w.clock.Set(end)
			}
			r := w.nextWake()
			if tt.inWindow {
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

			// Missed or not, the log says so, naming the wake planned
			// before the power-off and how late the agent came back.
			missed := "resumed after the planned wake"
			logged := strings.Contains(log.String(), missed)
			want := "plannedWake=" + planned.UTC().Format(time.RFC3339) + " late=" + now.Sub(planned).String()
			if tt.late && (!logged || !strings.Contains(log.String(), want)) {
				t.Errorf("log after a missed wake does not say %q with %q:\n%s", missed, want, log.String())
			}
			if !tt.late && logged {
				t.Errorf("log after a restart before the planned wake says %q:\n%s", missed, log.String())
			}

			// The pulse chain continues from bbolt, and the card names its
			// new head.
			lv, doc := w.served()
			w.checkLiveness("after the restart", lv, doc, r)
			if err := pulse.VerifyNext(pulse1, doc); err != nil {
				t.Errorf("pulse after the restart does not follow the one before: %v", err)
			}

			// Asleep, the agent armed its wake source for the window the
			// wall clock gave, not for the wake it missed.
			<-rtc.asleep
			rtc.wakeup <- struct{}{} // the alarm fires when it was armed for
			w.waitPhases(runtime.PhasePublish, runtime.PhaseDrain)
			_, end = w.window.Next(start)
			w.clock.Set(end)
			if r := w.nextWake(); r.Reason != "rtc" || !r.At.Equal(start) {
				t.Errorf("wake after the restart: %s at %v, want the RTC armed for %v", r.Reason, r.At, start)
			}
			w.shutdown()

			// The store kept the restart's cycle: the last wake recorded is
			// the one after it.
			db, err := bolt.Open(filepath.Join(w.cfg.DataDir, runtime.DBFile), 0o600, &bolt.Options{ReadOnly: true})
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
		})
	}
}
