package sleeptime_test

import (
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/wake/sleeptime"
	"github.com/torpor-dev/torpor/wake/waketest"
)

func TestDetector(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		step    func(c *clocktest.Clock, k *waketest.KernelClock)
		resumed bool
		stepped bool
		slept   time.Duration
	}{
		{"awake", func(c *clocktest.Clock, k *waketest.KernelClock) { c.Advance(time.Second); k.Run(time.Second) }, false, false, 0},
		{"suspended", func(c *clocktest.Clock, k *waketest.KernelClock) { c.Advance(time.Hour); k.Suspend(time.Hour) }, true, false, time.Hour},
		{"monotonic kept running (QEMU virt)", func(c *clocktest.Clock, k *waketest.KernelClock) { c.Advance(time.Hour); k.Run(time.Hour) }, false, false, 0},
		{"NTP step forward", func(c *clocktest.Clock, k *waketest.KernelClock) { c.Advance(10 * time.Minute); k.Run(time.Second) }, false, true, 0},
		{"clock set back", func(c *clocktest.Clock, k *waketest.KernelClock) { c.Set(t0.Add(-time.Hour)); k.Run(time.Second) }, false, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := clocktest.New(t0)
			k := waketest.NewKernelClock(time.Minute)
			d := &sleeptime.Detector{Meter: sleeptime.Meter{Clock: c, Kernel: k}}
			if ev := d.Check(); ev != (sleeptime.Event{}) {
				t.Fatalf("first Check = %+v, want nothing", ev)
			}
			tt.step(c, k)
			ev := d.Check()
			if ev.Resumed != tt.resumed || ev.Stepped != tt.stepped || ev.Span.Suspended() != tt.slept {
				t.Errorf("Check = %+v (suspended %v), want resumed=%v stepped=%v suspended %v", ev, ev.Span.Suspended(), tt.resumed, tt.stepped, tt.slept)
			}
		})
	}
}

// The real kernel clocks run, and CLOCK_BOOTTIME never trails
// CLOCK_MONOTONIC.
func TestSystemClocks(t *testing.T) {
	a := sleeptime.System.Read()
	b := sleeptime.System.Read()
	if a.Boot <= 0 || a.Mono <= 0 || a.Boot < a.Mono || b.Boot < a.Boot || b.Mono < a.Mono {
		t.Fatalf("readings %+v then %+v", a, b)
	}
	m := sleeptime.Meter{}
	s := m.Since(m.Mark())
	if s.Boot < 0 || s.Mono < 0 || s.Suspended() < 0 {
		t.Errorf("span %+v", s)
	}
}
