package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
)

// TestPendingIsNeverFailure: devices of a started wave that have not
// woken stay pending and offered; the next wave starts after WaveTime
// without them, and their silence breaches nothing.
func TestPendingIsNeverFailure(t *testing.T) {
	c := clocktest.New(t0)
	s := spec(10, 100)
	s.Criteria = Criteria{MinExecuted: 1, ThresholdPercent: 1}
	r, err := Plan(s, fleet(20, 1), c.Now())
	if err != nil {
		t.Fatal(err)
	}
	first := r.Waves[0].Devices
	if len(first) != 2 || !r.Offer(first[0]) || r.Offer(r.Waves[1].Devices[0]) {
		t.Fatalf("wave 0 %v: offered %v; a device of wave 1 offered %v", first, r.Offer(first[0]), r.Offer(r.Waves[1].Devices[0]))
	}
	c.Advance(59 * time.Minute)
	if r.Step(c.Now()) || r.Wave != 0 {
		t.Fatalf("at 59 min: stepped to wave %d", r.Wave)
	}
	c.Advance(time.Minute)
	if !r.Step(c.Now()) || r.Wave != 1 || r.State != Running {
		t.Fatalf("at WaveTime: wave %d, %s; want wave 1 running", r.Wave, r.State)
	}
	if got := r.Counts(); got.Pending != 20 || got.Failed() != 0 {
		t.Errorf("counts %+v: want 20 pending, 0 failed", got)
	}
	if !r.Offer(first[0]) {
		t.Error("a pending device of wave 0 is no longer offered")
	}
}

// TestWaveAdvancesWhenReported: a wave all of whose devices reported
// starts the next at once; the last one all reported is Done.
func TestWaveAdvancesWhenReported(t *testing.T) {
	c := clocktest.New(t0)
	r, err := Plan(spec(50, 100), fleet(4, 1), c.Now())
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range r.Waves[0].Devices {
		c.Advance(time.Minute)
		if err := r.Report(d, Installed, "", c.Now()); err != nil {
			t.Fatal(err)
		}
		if want := i; r.Wave != want {
			t.Errorf("after %d reports: wave %d, want %d", i+1, r.Wave, want)
		}
	}
	if !r.Waves[1].Started.Equal(c.Now()) {
		t.Errorf("wave 1 started %v, want %v", r.Waves[1].Started, c.Now())
	}
	for _, d := range r.Waves[1].Devices {
		if err := r.Report(d, Installed, "", c.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if r.State != Done || r.Counts().Installed != 4 {
		t.Errorf("all installed: %s, %+v", r.State, r.Counts())
	}
	if err := r.Report("d999", Installed, "", c.Now()); err == nil {
		t.Error("a report of a device outside the rollout was accepted")
	}
	if err := r.Report(r.Waves[0].Devices[0], "maybe", "", c.Now()); err == nil {
		t.Error("an unknown outcome was accepted")
	}
}

// TestBreachPauses: the criteria judge only devices that reported, of the
// failure types named, once MinExecuted reported; a breach pauses the
// rollout with the rate as the reason and stops offers.
func TestBreachPauses(t *testing.T) {
	tests := []struct {
		name    string
		crit    Criteria
		reports []Outcome
		paused  bool
	}{
		{"below minimum executed", Criteria{MinExecuted: 4, ThresholdPercent: 50}, []Outcome{RolledBack, RolledBack, RolledBack}, false},
		{"at threshold", Criteria{MinExecuted: 4, ThresholdPercent: 50}, []Outcome{Installed, RolledBack, Installed, Refused}, true},
		{"below threshold", Criteria{MinExecuted: 4, ThresholdPercent: 50}, []Outcome{Installed, RolledBack, Installed, Installed}, false},
		{"refusals not counted", Criteria{FailureTypes: []string{"rolled-back"}, MinExecuted: 2, ThresholdPercent: 50}, []Outcome{Refused, Refused, Installed}, false},
		{"rollbacks counted", Criteria{FailureTypes: []string{"rolled-back"}, MinExecuted: 2, ThresholdPercent: 50}, []Outcome{Refused, RolledBack, RolledBack}, true},
		{"all", Criteria{FailureTypes: []string{FailureAll}, MinExecuted: 2, ThresholdPercent: 50}, []Outcome{Refused, Installed}, true},
		{"no threshold", Criteria{}, []Outcome{RolledBack, RolledBack}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec(100)
			s.Criteria = tt.crit
			r, err := Plan(s, fleet(10, 1), t0)
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range tt.reports {
				if err := r.Report(r.Waves[0].Devices[i], o, "trial failed", t0); err != nil {
					t.Fatal(err)
				}
			}
			if got := r.State == Paused; got != tt.paused {
				t.Fatalf("paused = %v (%s, %q), want %v", got, r.State, r.Reason, tt.paused)
			}
			if tt.paused && (!strings.Contains(r.Reason, "failure rate") || r.Offer(r.Waves[0].Devices[9])) {
				t.Errorf("paused: reason %q, offered %v", r.Reason, r.Offer(r.Waves[0].Devices[9]))
			}
		})
	}
}

// TestResumeAbort: a resume starts a new epoch, so the old failures do
// not pause it again; new ones do. Abort stops offers for good, keeps the
// results, and cannot be undone.
func TestResumeAbort(t *testing.T) {
	s := spec(100)
	s.Criteria = Criteria{MinExecuted: 2, ThresholdPercent: 50}
	r, err := Plan(s, fleet(10, 1), t0)
	if err != nil {
		t.Fatal(err)
	}
	d := r.Waves[0].Devices
	r.Report(d[0], RolledBack, "", t0)
	r.Report(d[1], RolledBack, "", t0)
	if r.State != Paused {
		t.Fatalf("state %s after 2 of 2 rolled back", r.State)
	}
	if err := r.Pause("again", t0); err == nil {
		t.Error("pausing a paused rollout succeeded")
	}
	if err := r.Resume(t0); err != nil || r.State != Running {
		t.Fatalf("Resume = %v, state %s", err, r.State)
	}
	r.Report(d[2], Installed, "", t0)
	if r.State != Running {
		t.Fatalf("after resume and one install: %s (%s)", r.State, r.Reason)
	}
	r.Report(d[3], RolledBack, "", t0)
	if r.State != Paused {
		t.Fatalf("after resume, 1 of 2 new reports failed: %s", r.State)
	}
	if err := r.Abort("bad build", t0); err != nil || r.State != Aborted || r.Offer(d[5]) {
		t.Fatalf("Abort = %v, state %s, offered %v", err, r.State, r.Offer(d[5]))
	}
	if err := r.Resume(t0); err == nil {
		t.Error("resuming an aborted rollout succeeded")
	}
	if c := r.Counts(); c.RolledBack != 3 || c.Installed != 1 || c.Pending != 6 {
		t.Errorf("counts after abort %+v", c)
	}
}
