package wake_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/gpio"
	"github.com/torpor-dev/torpor/wake/rtc"
	"github.com/torpor-dev/torpor/wake/suspend"
	"github.com/torpor-dev/torpor/wake/timer"
	"github.com/torpor-dev/torpor/wake/waketest"
	pgpio "periph.io/x/conn/v3/gpio"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func TestReasonText(t *testing.T) {
	for _, r := range []wake.Reason{wake.ReasonUnknown, wake.ReasonTimer, wake.ReasonRTC, wake.ReasonGPIO} {
		b, err := r.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var got wake.Reason
		if err := got.UnmarshalText(b); err != nil || got != r {
			t.Errorf("round trip of %v = %v, %v", r, got, err)
		}
	}
	if r, err := wake.ParseReason("External"); err != nil || r != wake.ReasonUnknown {
		t.Errorf(`ParseReason("External") = %v, %v`, r, err)
	}
	if _, err := wake.ParseReason("button"); err == nil {
		t.Error(`ParseReason("button") succeeded`)
	}
	if _, err := wake.Reason(9).MarshalText(); err == nil {
		t.Error("MarshalText of an invalid reason succeeded")
	}
}

type result struct {
	w   wake.Wake
	err error
}

// A timer and a GPIO line at once: whichever fires first wins, the other
// is halted.
func TestFirst(t *testing.T) {
	tests := []struct {
		name string
		fire func(c *clocktest.Clock, p *waketest.Pin)
		want wake.Reason
	}{
		{"timer", func(c *clocktest.Clock, _ *waketest.Pin) { c.Advance(time.Hour) }, wake.ReasonTimer},
		{"gpio", func(_ *clocktest.Clock, p *waketest.Pin) { p.EdgesChan <- pgpio.Low }, wake.ReasonGPIO},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := clocktest.New(t0)
			kc := waketest.NewKernelClock(0)
			p := waketest.NewPin("GPIO17", 17)
			tm := &timer.Source{Clock: c, Kernel: kc}
			g := &gpio.Source{Pin: p, Edge: pgpio.FallingEdge, Clock: c, Kernel: kc}
			created := c.TimerCreated()
			ch := make(chan result, 1)
			go func() {
				w, err := wake.First(context.Background(), t0.Add(time.Hour), tm, g)
				ch <- result{w, err}
			}()
			<-created
			if err := p.WaitingForEdge(context.Background()); err != nil {
				t.Fatal(err)
			}
			tt.fire(c, p)
			r := <-ch
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.w.Reason != tt.want {
				t.Errorf("First = %v (%s), want %v", r.w.Reason, r.w.Detail, tt.want)
			}
			if c.Pending() != 0 {
				t.Errorf("%d timers still pending", c.Pending())
			}
		})
	}
}

// An RTC source that suspends, with a gpio-keys wakeup source declared: a
// key press ends the suspend and is reported as a GPIO wake.
func TestFirstWithSuspendingRTC(t *testing.T) {
	k := waketest.NewKernel(t, t0)
	k.PressAt(t0.Add(7 * time.Minute))
	src := &rtc.Source{
		Alarm:  &rtc.Alarm{Sys: k.Sys(), Dev: k.Dev(), Clock: k.Clock, WriteFile: k.WriteFile},
		System: &suspend.System{Sys: k.Sys(), WriteFile: k.WriteFile, Meter: k.Meter()},
		Keys:   []string{waketest.KeyLabel},
	}
	w, err := wake.First(context.Background(), t0.Add(time.Hour), src)
	if err != nil {
		t.Fatal(err)
	}
	if w.Reason != wake.ReasonGPIO || w.IRQ != waketest.KeysIRQ || w.Slept.Boot != 7*time.Minute {
		t.Errorf("First = %+v, want a gpio wake after 7m", w)
	}
}

type failing struct{ halted bool }

func (f *failing) Wait(context.Context, time.Time) (wake.Wake, error) {
	return wake.Wake{}, errors.New("no such device")
}
func (f *failing) Halt() error { f.halted = true; return nil }

func TestFirstErrors(t *testing.T) {
	if _, err := wake.First(context.Background(), t0); err == nil {
		t.Error("First with no sources succeeded")
	}
	c := clocktest.New(t0)
	tm := &timer.Source{Clock: c, Kernel: waketest.NewKernelClock(0)}
	f := &failing{}
	_, err := wake.First(context.Background(), t0.Add(time.Hour), tm, f)
	if err == nil || !strings.Contains(err.Error(), "source 1: no such device") {
		t.Errorf("First with a failing source = %v", err)
	}
	if !f.halted || c.Pending() != 0 {
		t.Errorf("sources not halted: failing halted %v, %d timers pending", f.halted, c.Pending())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := wake.First(ctx, t0.Add(time.Hour), tm); !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "source 0") {
		t.Errorf("First with a cancelled context = %v, want context.Canceled as is", err)
	}
}

// TestKeepsProcess: the sources whose sleep the process lives through say
// so; a power-off, and a source that says nothing, do not keep it, nor
// does a set of sources with one of those in it.
func TestKeepsProcess(t *testing.T) {
	for _, tt := range []struct {
		name string
		s    wake.Source
		want bool
	}{
		{"timer", &timer.Source{}, true},
		{"gpio", &gpio.Source{}, true},
		{"rtc, suspend to RAM", &rtc.Source{State: suspend.Mem}, true},
		{"rtc, freeze (the default)", &rtc.Source{}, true},
		{"rtc, power-off", &rtc.Source{State: suspend.PowerOff}, false},
		{"suspend, power-off", &suspend.Source{State: suspend.PowerOff}, false},
		{"suspend, mem", &suspend.Source{State: suspend.Mem}, true},
		{"a source that does not say", &failing{}, false},
		{"any of timer and rtc (mem)", wake.Any{&timer.Source{}, &rtc.Source{State: suspend.Mem}}, true},
		{"any of timer and a power-off", wake.Any{&timer.Source{}, &suspend.Source{State: suspend.PowerOff}}, false},
	} {
		if got := wake.KeepsProcess(tt.s); got != tt.want {
			t.Errorf("%s: KeepsProcess %v, want %v", tt.name, got, tt.want)
		}
	}
}
