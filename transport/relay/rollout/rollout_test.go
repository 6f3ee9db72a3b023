package rollout

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 5, 10, 20, 0, 0, time.UTC) // second 1200 of the hour

// fleet returns n devices d00.. spread over cohorts: device i wakes at
// minute (i*7)%60, second (i/60)*10 (so 60 devices: 60 cohorts of one;
// more repeat minutes with other seconds).
func fleet(n, perCohort int) []Device {
	var ds []Device
	for i := range n {
		c := i / perCohort
		ds = append(ds, Device{ID: fmt.Sprintf("d%03d", i), Minute: (c * 7) % 60, Second: (c / 60) * 10})
	}
	return ds
}

func spec(p ...int) Spec {
	return Spec{ID: "r1", Target: Target{Name: "torpor-agent/linux-armv6/1.4.0", Version: "1.4.0"}, Percents: p}
}

// TestPlanWaves: waves take whole cohorts, in the order they next wake
// after the start, until their cumulative share is reached.
func TestPlanWaves(t *testing.T) {
	tests := []struct {
		name      string
		n, per    int
		percents  []int
		wantSizes []int
	}{
		{"100 devices in cohorts of 1", 100, 1, []int{1, 10, 50, 100}, []int{1, 9, 40, 50}},
		{"100 devices in cohorts of 4", 100, 4, []int{1, 10, 50, 100}, []int{4, 8, 40, 48}},
		{"40 devices in cohorts of 10: 1 % and 10 % are one cohort", 40, 10, []int{1, 10, 50, 100}, []int{10, 10, 20}},
		{"one device", 1, 1, []int{1, 100}, []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Plan(spec(tt.percents...), fleet(tt.n, tt.per), t0)
			if err != nil {
				t.Fatal(err)
			}
			var sizes []int
			seen := map[string]bool{}
			for _, w := range r.Waves {
				sizes = append(sizes, len(w.Devices))
				for _, d := range w.Devices {
					if seen[d] {
						t.Errorf("device %s in two waves", d)
					}
					seen[d] = true
				}
			}
			if !slices.Equal(sizes, tt.wantSizes) || len(seen) != tt.n {
				t.Errorf("wave sizes %v (%d devices), want %v (%d)", sizes, len(seen), tt.wantSizes, tt.n)
			}
			if last := r.Waves[len(r.Waves)-1].Percent; last != 100 {
				t.Errorf("last wave's percent %d, want 100", last)
			}
		})
	}
}

// TestCohortOrder: the first wave is the cohort waking next after the
// start (minute 20 at 10:20:00), then minute 21, …, wrapping past the
// hour (minute 19 second 59 is last); devices of one minute and second are never split.
func TestCohortOrder(t *testing.T) {
	ds := []Device{{"late", 19, 59}, {"next-a", 20, 0}, {"next-b", 20, 0}, {"after", 21, 30}, {"wrap", 5, 0}}
	r, err := Plan(spec(20, 60, 100), ds, t0)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, w := range r.Waves {
		got = append(got, w.Devices)
	}
	want := [][]string{{"next-a", "next-b"}, {"after"}, {"wrap", "late"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("waves %v, want %v", got, want)
	}
	if !slices.Equal(r.Waves[0].Cohorts, []int{1200}) || !slices.Equal(r.Waves[2].Cohorts, []int{300, 19*60 + 59}) {
		t.Errorf("cohorts %v, %v", r.Waves[0].Cohorts, r.Waves[2].Cohorts)
	}
}

// TestPlanRefuses: a bad spec or fleet is refused with ErrBadSpec and a
// message that says what is wrong.
func TestPlanRefuses(t *testing.T) {
	ok := fleet(10, 1)
	bad := func(mod func(*Spec)) Spec { s := spec(1, 100); mod(&s); return s }
	tests := []struct {
		name    string
		spec    Spec
		devices []Device
		want    string
	}{
		{"no target", bad(func(s *Spec) { s.Target = Target{} }), ok, "a name and a version"},
		{"long name", bad(func(s *Spec) { s.Target.Name = strings.Repeat("n", 257) }), ok, "name is 257 bytes"},
		{"upper-case sha256", bad(func(s *Spec) { s.Target.SHA256 = strings.Repeat("AB", 32) }), ok, "lower-case hex"},
		{"short sha256", bad(func(s *Spec) { s.Target.SHA256 = "abcd" }), ok, "64 lower-case hex"},
		{"bad id", bad(func(s *Spec) { s.ID = "a b" }), ok, "letters, digits"},
		{"percents down", spec(10, 5, 100), ok, "strictly increasing"},
		{"last not 100", spec(10, 50), ok, "must be 100"},
		{"percent 0", spec(0, 100), ok, "1–100"},
		{"failure type", bad(func(s *Spec) { s.Criteria.FailureTypes = []string{"TIMED_OUT"} }), ok, `"TIMED_OUT"`},
		{"threshold", bad(func(s *Spec) { s.Criteria.ThresholdPercent = 101 }), ok, "threshold"},
		{"no devices", spec(100), nil, "0 devices"},
		{"too many", spec(100), fleet(MaxDevices+1, 1), "5001 devices"},
		{"twice", spec(100), []Device{{ID: "a"}, {ID: "a"}}, "listed twice"},
		{"minute", spec(100), []Device{{ID: "a", Minute: 60}}, "minute 60"},
	}
	for _, tt := range tests {
		_, err := Plan(tt.spec, tt.devices, t0)
		if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Plan error %v, want ErrBadSpec with %q", tt.name, err, tt.want)
		}
	}
}
