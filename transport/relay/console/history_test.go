package console

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/wake"
)

// TestMissed: the windows or pulses a schedule promised and that did not
// come before a wake, counted from the one overdue is judged by.
func TestMissed(t *testing.T) {
	win := wake.Window{Minute: 0, Length: 5 * time.Minute}
	next := t0.Add(time.Hour)
	for _, tc := range []struct {
		name string
		prev agents.State
		at   time.Time
		want int
	}{
		{"hourly, on time", agents.State{Mode: wake.HourlyWake, Window: win, NextWake: next}, next.Add(time.Minute), 0},
		{"hourly, within the window", agents.State{Mode: wake.HourlyWake, Window: win, NextWake: next}, next.Add(5 * time.Minute), 0},
		{"hourly, one window late", agents.State{Mode: wake.HourlyWake, Window: win, NextWake: next}, next.Add(time.Hour + time.Minute), 1},
		{"hourly, three windows late", agents.State{Mode: wake.HourlyWake, Window: win, NextWake: next}, next.Add(3*time.Hour + time.Minute), 3},
		{"sleep, its one wake missed", agents.State{Mode: wake.Sleep, Window: win, NextWake: next}, next.Add(10 * time.Hour), 1},
		{"sleep, no wake promised", agents.State{Mode: wake.Sleep, Window: win}, next.Add(10 * time.Hour), 0},
		{"always_on, two pulses late", agents.State{Mode: wake.AlwaysOn, Window: win, UpdatedAt: t0}, t0.Add(2*PulseInterval + 6*time.Minute), 2},
	} {
		if got := Missed(tc.prev, tc.at); got != tc.want {
			t.Errorf("%s: Missed = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestSparklineScales: the path has one point per value, left to right,
// from 0 at the bottom of the box to the largest value at its top; the
// text says the least, the largest and the last value.
func TestSparklineScales(t *testing.T) {
	sl := newSparkline("depth", "Queue depth", []float64{0, 5, 10, 5}, func(v float64) string { return strings.Repeat("#", int(v)) })
	// x: 2, 2+236/3, 2+2·236/3, 238; y: 38 - v/10·36.
	if want := "M2 38 L80.67 20 L159.33 2 L238 20"; sl.Path != want {
		t.Errorf("path %q, want %q", sl.Path, want)
	}
	if sl.Min != "" || sl.Max != strings.Repeat("#", 10) || sl.Last != "#####" || sl.N != 4 {
		t.Errorf("min %q max %q last %q n %d", sl.Min, sl.Max, sl.Last, sl.N)
	}
	flat := newSparkline("missed", "Missed", []float64{0, 0}, func(float64) string { return "0" })
	if want := "M2 38 L238 38"; flat.Path != want {
		t.Errorf("all zero: path %q, want %q (the bottom line)", flat.Path, want)
	}
	if one := newSparkline("depth", "d", []float64{3}, func(float64) string { return "3" }); one.Path != "M120 2 h0.01" {
		t.Errorf("one value: path %q, want a dot at the middle top", one.Path)
	}
	h := []operatorapi.HistoryWake{{QueueDepth: 4, Missed: 1}, {QueueDepth: 2, AwakeMs: 1500}}
	got := sparklines(h)
	if len(got) != 3 || got[0].Class != "depth" || got[0].Last != "2" || got[1].N != 1 || got[1].Max != "1.5 s" || got[2].Max != "1" {
		t.Errorf("sparklines of a history = %+v", got)
	}
	if got := sparklines(nil); got != nil {
		t.Errorf("sparklines of no history = %+v, want none", got)
	}
}

// TestDetailHistory: the device's detail (and so its JSON) carries the
// wakes the store keeps, oldest first; none is an empty list.
func TestDetailHistory(t *testing.T) {
	f := newFixture(t)
	key := didtest.Key(t, 1)
	f.put(t, device{key: key, name: "pump", mode: wake.HourlyWake, next: t0.Add(10 * time.Minute)})
	ctx := context.Background()
	d, err := f.src.One(ctx, key.DID().String(), t0)
	if err != nil || d.Detail.History == nil || len(d.Detail.History) != 0 {
		t.Fatalf("detail before any wake: %v, %v; want an empty history", d.Detail, err)
	}
	for i := range 3 {
		w := agents.Wake{At: t0.Add(time.Duration(i-3) * time.Hour), Reason: "rtc", QueueDepth: i, Missed: i % 2, Drained: i, AwakeMs: 800, Relay: "https://relay.example"}
		if err := f.states.RecordWake(ctx, key.DID().String(), w); err != nil {
			t.Fatal(err)
		}
	}
	d, err = f.src.One(ctx, key.DID().String(), t0)
	if err != nil {
		t.Fatal(err)
	}
	want := []operatorapi.HistoryWake{
		{At: t0.Add(-3 * time.Hour), Reason: "rtc", QueueDepth: 0, Missed: 0, Drained: 0, AwakeMs: 800, Relay: "https://relay.example"},
		{At: t0.Add(-2 * time.Hour), Reason: "rtc", QueueDepth: 1, Missed: 1, Drained: 1, AwakeMs: 800, Relay: "https://relay.example"},
		{At: t0.Add(-1 * time.Hour), Reason: "rtc", QueueDepth: 2, Missed: 0, Drained: 2, AwakeMs: 800, Relay: "https://relay.example"},
	}
	if diff := cmp.Diff(want, d.Detail.History); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	b, _ := json.Marshal(d.Detail)
	if !strings.Contains(string(b), `"history":[{"at":"2026-01-15T09:00:00Z","reason":"rtc","awakeMs":800,"drained":0,"queueDepth":0,"missedWindows":0,`) {
		t.Errorf("detail JSON: %s", b)
	}
}

// TestDevicePageSparklines: the device page draws the history as three
// inline SVG sparklines, each with a title and its values as text, styled
// by classes only, under the strict CSP; a device with no wake says so.
func TestDevicePageSparklines(t *testing.T) {
	s := newSite(t, "")
	ctx := context.Background()
	id := s.dev.DID().String()
	c := s.login(t)
	a := s.do(t, "GET", "/fleet/device/"+id, nil, c)
	if a.status != 200 || !strings.Contains(a.body, "No wakes yet") || strings.Contains(a.body, "<svg") {
		t.Errorf("device page without history: %d, want 'No wakes yet' and no sparkline:\n%s", a.status, a.body)
	}
	for i, depth := range []int{3, 12, 0} {
		w := agents.Wake{At: t0.Add(time.Duration(i-3) * time.Hour), Reason: "rtc", QueueDepth: depth, Missed: i, AwakeMs: int64(i+1) * 1000}
		if err := s.states.RecordWake(ctx, id, w); err != nil {
			t.Fatal(err)
		}
	}
	a = s.do(t, "GET", "/fleet/device/"+id, nil, c)
	if csp := a.h.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none';") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP of the page with sparklines: %q", csp)
	}
	for _, want := range []string{
		`<svg class="spark depth" viewBox="0 0 240 40" role="img" aria-labelledby="spark-depth"><title>Queue depth at each wake (records): min 0, max 12, last 0</title><path d="M2 29 L120 2 L238 38"/></svg>`,
		`Awake time of each wake: min 1.0 s · max 3.0 s · last 3.0 s (3 wakes)`,
		`<svg class="spark missed"`, `Windows missed before each wake: min 0 · max 2 · last 2`,
	} {
		if !strings.Contains(a.body, want) {
			t.Errorf("device page lacks %s:\n%s", want, a.body)
		}
	}
	if strings.Contains(a.body, "style=") || strings.Contains(a.body, "<script>") {
		t.Errorf("device page has an inline style or script, which the CSP refuses:\n%s", a.body)
	}
}
