package wakemeter

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

const (
	bootWaking = `time=2026-12-03T18:00:00Z level=INFO msg=waking reason=boot mode=hourly_wake`
	bootWake   = `time=2026-12-03T18:00:01Z level=INFO msg=wake reason=boot mode=hourly_wake awake=5m1s linkAttempts=1 drain="0 records" phase.link=20ms phase.live=5m`
	waking     = `time=2026-12-03T19:00:00Z level=INFO msg=waking reason=timer mode=hourly_wake windowEnd=2026-12-03T19:05:00Z`
	wake       = `time=2026-12-03T19:05:00Z level=INFO msg=wake reason=timer mode=hourly_wake awake=5m1.5s linkAttempts=1 drain="0 records" phase.link=1s phase.pulse=100ms phase.card=200ms phase.publish=50ms phase.drain=10ms phase.live=5m phase.announce=40ms phase.close=100ms linkSent=2100 linkReceived=1700 nextWake=2026-12-03T20:00:00Z`
)

// TestMeter: the boot wake is left out; each timer wake's phases and its
// awake time without the live phase are summed; the meter is done at the
// n'th wake, with the CPU of this process read from /proc.
func TestMeter(t *testing.T) {
	m := New(os.Getpid(), 2)
	var ticks int64
	m.now = func() time.Time { ticks++; return time.Unix(ticks, 0) }
	lines := []string{bootWaking, "msg=other", bootWake, waking, "msg=other", wake, waking}
	for _, l := range lines {
		if done, err := m.Line(l); done || err != nil {
			t.Fatalf("Line(%q) = %v, %v; want not done", l, done, err)
		}
	}
	for i := 0; i < 1e6; i++ { // CPU time for the second wake
		_ = strings.Repeat("x", i%7)
	}
	if done, err := m.Line(wake); !done || err != nil {
		t.Fatalf("the second wake: %v, %v; want done", done, err)
	}
	w := m.Wakes()
	if w.N != 2 || w.Awake != 3*time.Second || w.Phases["link"] != 2*time.Second || w.Phases["close"] != 200*time.Millisecond {
		t.Errorf("Wakes() = %+v, want 2 wakes, 3 s awake, 2 s link, 200 ms close", w)
	}
	if w.LinkSent != 4200 || w.LinkReceived != 3400 {
		t.Errorf("link bytes: %d sent, %d received; want 4200 and 3400 (two wakes)", w.LinkSent, w.LinkReceived)
	}
	if w.InWake <= 0 || w.Cycle.User < 0 || w.Cycle.Sys < 0 {
		t.Errorf("CPU: in wake %v, cycle %+v; want some CPU in the wake", w.InWake, w.Cycle)
	}
	if w.Sleeps != 1 || w.Asleep < 0 {
		t.Errorf("asleep: %v over %d sleeps, want the one between the two timer wakes", w.Asleep, w.Sleeps)
	}
	want := []Span{{time.Unix(1, 0), time.Unix(2, 0)}, {time.Unix(3, 0), time.Unix(4, 0)}}
	if !reflect.DeepEqual(w.Spans, want) {
		t.Errorf("Spans = %v, want %v: the timer wakes' two readings, the boot wake left out", w.Spans, want)
	}
	if done, err := m.Line(waking); !done || err != nil {
		t.Errorf("a line after the last wake: %v, %v; want done", done, err)
	}
}

// TestSpansLeaveOutTheMetersReadings: a wake's span starts after the
// meter read the agent's CPU at its "waking" line and ends when the
// "wake" line came, before the meter's reading there, so that a meter
// outside the machine (the host of a guest) does not count the meter's
// own work as the wake's.
func TestSpansLeaveOutTheMetersReadings(t *testing.T) {
	m := New(os.Getpid(), 1)
	clk := time.Unix(100, 0)
	m.now = func() time.Time { return clk }
	m.taskCPU = func(pid int) (time.Duration, error) {
		clk = clk.Add(10 * time.Second) // the meter's reading takes its time
		return TaskCPU(pid)
	}
	if done, err := m.Line(waking); done || err != nil {
		t.Fatalf("waking: %v, %v", done, err)
	}
	clk = clk.Add(5 * time.Second) // the wake
	if done, err := m.Line(wake); !done || err != nil {
		t.Fatalf("wake: %v, %v; want done", done, err)
	}
	want := []Span{{time.Unix(110, 0), time.Unix(115, 0)}}
	if got := m.Wakes().Spans; !reflect.DeepEqual(got, want) {
		t.Errorf("Spans = %v, want %v: from after the first reading to before the second", got, want)
	}
}

// TestMeterLogLines: the lines of a measured wake, "waking" and "wake"
// included, are counted with their bytes, and the cpu= the agent's debug
// knob adds to each is filed under the later line of each pair: the
// phase's name for a phase line, the message for the others.
func TestMeterLogLines(t *testing.T) {
	lines := []string{
		bootWaking + " cpu=1s", bootWake + " cpu=2s", // the boot wake: not measured
		waking + " cpu=3s",
		`time=2026-12-03T19:00:01Z level=INFO msg=phase name=link took=1s cpu=3.01s`,
		`time=2026-12-03T19:00:01Z level=INFO msg="time established" source=relay cpu=3.015s`,
		`time=2026-12-03T19:00:01Z level=INFO msg=phase name=pulse took=1s cpu=3.025s`,
		wake + " cpu=3.5s",
		"msg=other cpu=9s", // between wakes: not measured
	}
	m := New(os.Getpid(), 2)
	for _, l := range lines {
		if _, err := m.Line(l); err != nil {
			t.Fatalf("Line(%q): %v", l, err)
		}
	}
	w := m.Wakes()
	want := map[string]time.Duration{"phase.link": 10 * time.Millisecond, "time established": 5 * time.Millisecond,
		"phase.pulse": 10 * time.Millisecond, "wake": 475 * time.Millisecond}
	if !reflect.DeepEqual(w.LineCPU, want) {
		t.Errorf("LineCPU = %v, want %v", w.LineCPU, want)
	}
	var bytes int64
	for _, l := range lines[2:7] {
		bytes += int64(len(l)) + 1
	}
	if w.LogLines != 5 || w.LogBytes != bytes {
		t.Errorf("%d lines, %d bytes; want 5 lines, %d bytes", w.LogLines, w.LogBytes, bytes)
	}
}

func TestMeterLinkError(t *testing.T) {
	m := New(os.Getpid(), 1)
	m.Line(waking)
	_, err := m.Line(`msg=wake reason=timer awake=1s linkError="dial tcp: refused"`)
	if err == nil || !strings.Contains(err.Error(), "did not link") {
		t.Errorf("a wake with a link error: %v, want an error", err)
	}
}

func TestLogDuration(t *testing.T) {
	tests := []struct {
		line, name string
		want       time.Duration
		wantErr    bool
	}{
		{wake, "awake", 5*time.Minute + 1500*time.Millisecond, false},
		{wake, "phase.link", time.Second, false},
		{wake, "link", 0, false}, // phase.link is not link
		{"msg=wake slept=3h", "awake", 0, false},
		{"msg=wake awake=soon", "awake", 0, true},
	}
	for _, tt := range tests {
		got, err := LogDuration(tt.line, tt.name)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("LogDuration(…, %q) = %v, %v; want %v, error %v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestProcCPU(t *testing.T) {
	if _, err := ProcCPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if _, err := TaskCPU(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if _, err := ProcCPU(-1); err == nil {
		t.Error("ProcCPU(-1) = nil error")
	}
	if _, err := TaskCPU(-1); err == nil {
		t.Error("TaskCPU(-1) = nil error")
	}
}

// TestWakesAdd: two runs' wakes sum member by member, phases by name.
func TestWakesAdd(t *testing.T) {
	a := Wakes{N: 2, Cycle: CPUTime{User: 3, Sys: 4}, InWake: 5, Awake: 6, LinkSent: 7, LinkReceived: 8, Asleep: 9, Sleeps: 1, LogLines: 9, LogBytes: 10,
		Phases: map[string]time.Duration{"link": 1, "drain": 2}, LineCPU: map[string]time.Duration{"wake": 1}}
	b := Wakes{N: 4, Cycle: CPUTime{User: 30, Sys: 40}, InWake: 50, Awake: 60, LinkSent: 70, LinkReceived: 80, Asleep: 90, Sleeps: 3, LogLines: 90, LogBytes: 100,
		Phases: map[string]time.Duration{"link": 10, "pulse": 20}}
	want := Wakes{N: 6, Cycle: CPUTime{User: 33, Sys: 44}, InWake: 55, Awake: 66, LinkSent: 77, LinkReceived: 88, Asleep: 99, Sleeps: 4, LogLines: 99, LogBytes: 110,
		Phases: map[string]time.Duration{"link": 11, "drain": 2, "pulse": 20}, LineCPU: map[string]time.Duration{"wake": 1}}
	if got := a.Add(b); !reflect.DeepEqual(got, want) {
		t.Errorf("Add = %+v, want %+v", got, want)
	}
	if got := (Wakes{}).Add(b); got.N != 4 || got.Phases["pulse"] != 20 {
		t.Errorf("the zero Wakes plus b = %+v", got)
	}
}
