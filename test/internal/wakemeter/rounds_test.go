package wakemeter

import (
	"slices"
	"testing"
	"time"
)

// TestRoundOrder: the builds alternate which runs first, round after
// round, and each round runs both once.
func TestRoundOrder(t *testing.T) {
	var all []string
	for r := range 4 {
		all = append(all, RoundOrder(r)...)
	}
	if want := []string{"base", "tree", "tree", "base", "base", "tree", "tree", "base"}; !slices.Equal(all, want) {
		t.Errorf("RoundOrder(0..3) = %v, want %v", all, want)
	}
	if RoundSuffix(0) != "" || RoundSuffix(1) != "-2" {
		t.Errorf("RoundSuffix(0), RoundSuffix(1) = %q, %q; want \"\", \"-2\"", RoundSuffix(0), RoundSuffix(1))
	}
}

// TestRounds: TORPOR_EMPTYWAKE_ROUNDS overrides the default, and a value
// that is not a whole number of rounds is an error.
func TestRounds(t *testing.T) {
	tests := []struct {
		env  string
		want int
		err  bool
	}{{"", 2, false}, {"3", 3, false}, {"0", 0, true}, {"two", 0, true}}
	for _, tt := range tests {
		t.Setenv("TORPOR_EMPTYWAKE_ROUNDS", tt.env)
		n, err := Rounds(2)
		if n != tt.want || (err != nil) != tt.err {
			t.Errorf("Rounds(2) with %q = %d, %v; want %d, error %v", tt.env, n, err, tt.want, tt.err)
		}
	}
}

// metrics records what ReportRatios reports.
type metrics map[string]float64

func (m metrics) ReportMetric(n float64, unit string) { m[unit] = n }

// TestReportRatios: the ratios are per wake, of sums that may hold
// different numbers of wakes.
func TestReportRatios(t *testing.T) {
	base := Wakes{N: 2, InWake: 40 * time.Millisecond, Cycle: CPUTime{User: 60 * time.Millisecond, Sys: 20 * time.Millisecond}}
	tree := Wakes{N: 4, InWake: 40 * time.Millisecond, Cycle: CPUTime{User: 40 * time.Millisecond}}
	m := metrics{}
	ReportRatios(m, base, tree)
	if m["wake-cpu-ratio"] != 0.5 || m["cpu-ratio"] != 0.25 {
		t.Errorf("ReportRatios = %v, want wake-cpu-ratio 0.5, cpu-ratio 0.25", m)
	}
	m = metrics{}
	ReportRatios(m, Wakes{}, tree)
	if len(m) != 0 {
		t.Errorf("ReportRatios without base wakes = %v, want nothing", m)
	}
}
