package timer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/timer"
	"github.com/torpor-dev/torpor/wake/waketest"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func TestWaitFiresAtDeadline(t *testing.T) {
	tests := []struct {
		name    string
		wait    time.Duration
		recheck time.Duration
		steps   []time.Duration // advances before the last one fires it
	}{
		{"one step", 30 * time.Second, 0, nil},
		{"rechecked", 150 * time.Second, time.Minute, []time.Duration{time.Minute, time.Minute}},
		{"hour", time.Hour, 0, []time.Duration{20 * time.Minute, 20 * time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := clocktest.New(t0)
			kc := waketest.NewKernelClock(time.Minute)
			s := &timer.Source{Clock: c, Kernel: kc, Recheck: tt.recheck}
			created := c.TimerCreated()
			ch := waketest.StartWait(context.Background(), s, t0.Add(tt.wait))
			var spent time.Duration
			for _, d := range tt.steps {
				<-created
				created = c.TimerCreated()
				c.Advance(d)
				kc.Run(d)
				spent += d
				select {
				case r := <-ch:
					t.Fatalf("Wait returned early after %v: %+v", spent, r)
				default:
				}
			}
			<-created
			last := tt.wait - spent
			kc.Run(last)
			c.Advance(last)
			r := <-ch
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if r.Wake.Reason != wake.ReasonTimer || !r.Wake.At.Equal(t0.Add(tt.wait)) {
				t.Errorf("Wait = %v at %v, want timer at %v", r.Wake.Reason, r.Wake.At, t0.Add(tt.wait))
			}
			if r.Wake.Slept.Boot != tt.wait || r.Wake.Slept.Wall != tt.wait {
				t.Errorf("Slept = %+v, want %v on the wall and boot clocks", r.Wake.Slept, tt.wait)
			}
		})
	}
}

// A wall clock that jumps (a host resumed from a suspend the monotonic
// timers did not see, or NTP) is noticed at the next recheck.
func TestWaitFollowsWallClockJump(t *testing.T) {
	c := clocktest.New(t0)
	s := &timer.Source{Clock: c, Kernel: waketest.NewKernelClock(0), Recheck: time.Minute}
	created := c.TimerCreated()
	ch := waketest.StartWait(context.Background(), s, t0.Add(time.Hour))
	<-created
	created = c.TimerCreated()                     // before Set: the source arms its next timer as soon as Set fires this one
	c.Set(t0.Add(59*time.Minute + 30*time.Second)) // fires the pending 1 min step late
	<-created
	c.Advance(30 * time.Second)
	r := <-ch
	if r.Err != nil || r.Wake.Reason != wake.ReasonTimer || !r.Wake.At.Equal(t0.Add(time.Hour)) {
		t.Fatalf("Wait = %+v, %v; want a timer wake at %v", r.Wake, r.Err, t0.Add(time.Hour))
	}
}

func TestWaitPastDeadlineReturnsAtOnce(t *testing.T) {
	c := clocktest.New(t0)
	s := &timer.Source{Clock: c, Kernel: waketest.NewKernelClock(0)}
	w, err := s.Wait(context.Background(), t0.Add(-time.Second))
	if err != nil || w.Reason != wake.ReasonTimer {
		t.Fatalf("Wait(past) = %+v, %v", w, err)
	}
}

func TestHaltAndCancel(t *testing.T) {
	tests := []struct {
		name string
		stop func(s *timer.Source, cancel context.CancelFunc)
		want error
	}{
		{"halt", func(s *timer.Source, _ context.CancelFunc) { s.Halt() }, wake.ErrHalted},
		{"cancel", func(_ *timer.Source, cancel context.CancelFunc) { cancel() }, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := clocktest.New(t0)
			s := &timer.Source{Clock: c, Kernel: waketest.NewKernelClock(0)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			created := c.TimerCreated()
			ch := waketest.StartWait(ctx, s, time.Time{}) // zero: no deadline
			<-created
			tt.stop(s, cancel)
			if r := <-ch; !errors.Is(r.Err, tt.want) {
				t.Fatalf("Wait after %s = %+v, %v; want %v", tt.name, r.Wake, r.Err, tt.want)
			}
			if c.Pending() != 0 {
				t.Errorf("%d timers still pending after %s", c.Pending(), tt.name)
			}
			if err := s.Halt(); err != nil {
				t.Errorf("second Halt = %v", err)
			}
		})
	}
}

// steppedClock is a fake clock that is set to at just before it arms its
// first timer: a wall clock stepped between the source reading it and
// arming its timer.
type steppedClock struct {
	*clocktest.Clock
	at      time.Time
	stepped bool
}

func (c *steppedClock) NewTimer(d time.Duration) clock.Timer {
	if !c.stepped {
		c.stepped = true
		c.Set(c.at)
	}
	return c.Clock.NewTimer(d)
}

// TestWaitClockSteppedWhileArming: a clock set past the deadline while the
// timer is being armed wakes the source at once, not a whole wait later.
func TestWaitClockSteppedWhileArming(t *testing.T) {
	until := t0.Add(10 * time.Minute)
	c := &steppedClock{Clock: clocktest.New(t0), at: until}
	s := &timer.Source{Clock: c, Kernel: waketest.NewKernelClock(time.Minute)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // only a failing run waits for this
	defer cancel()
	w, err := s.Wait(ctx, until)
	if err != nil || w.Reason != wake.ReasonTimer || !w.At.Equal(until) {
		t.Fatalf("Wait = %+v, %v; want the timer's wake at %v", w, err, until)
	}
}

// TestAScaledWaitRechecksInRealTime: on a Scaled clock the wait's steps
// are Recheck of real time, so that a compressed hour (6 s at 600 times)
// is one timer, where it was sixty steps of a scaled minute (0.1 s each),
// each a wake of the process.
func TestAScaledWaitRechecksInRealTime(t *testing.T) {
	base := clocktest.NewRecorder(t0, 1)
	sc, err := clock.NewScaledAt(base, 600, t0)
	if err != nil {
		t.Fatal(err)
	}
	s := &timer.Source{Clock: sc, Kernel: waketest.NewKernelClock(time.Minute)}
	ch := waketest.StartWait(context.Background(), s, t0.Add(time.Hour))
	if d := <-base.Made; d != 6*time.Second {
		t.Fatalf("a scaled hour's wait armed a timer of %v of real time, want one of 6s", d)
	}
	base.Advance(6 * time.Second)
	if r := <-ch; r.Err != nil || r.Wake.Reason != wake.ReasonTimer {
		t.Errorf("Wait = %+v, %v; want a timer wake", r.Wake, r.Err)
	}
}
