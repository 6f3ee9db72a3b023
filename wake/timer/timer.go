// Package timer is the in-process wake source: a wait on the injected
// clock, for tests, demonstrations on a Scaled clock and mains-powered
// gateways that never suspend.
//
// The deadline is a wall-clock time. Go's timers run on the monotonic
// clock, which stops while the system is suspended, so a long wait is cut
// into steps of at most Recheck and the wall clock is read again after
// each: a host that was suspended under a waiting gateway fires at most
// Recheck late, not the whole suspend late. Recheck is real time, as the
// suspend is: on a Scaled clock a step is Recheck times the clock's factor
// of its time, so that a demonstration's compressed hour is one timer, not
// sixty (each a wake of the process; docs/performance.md measures the
// agent's compressed sleep).
package timer

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/sleeptime"
)

// DefaultRecheck is the longest step of a wait when Source.Recheck is zero.
const DefaultRecheck = time.Minute

// Source waits on a clock. It implements wake.Source. The zero value uses
// the real clocks.
type Source struct {
	Clock clock.Clock
	// Kernel reads CLOCK_BOOTTIME for Wake.Slept; nil means the system's.
	Kernel sleeptime.Kernel
	// Recheck bounds each step of the wait, in real time (on a Scaled
	// clock, Recheck times its factor of the clock's time); zero means
	// DefaultRecheck.
	Recheck time.Duration

	mu   sync.Mutex
	halt chan struct{} // closed by Halt; replaced by each Wait
}

// Wait implements wake.Source: it returns wake.ReasonTimer once the clock
// reads until or later. A zero until waits until Halt or ctx.
func (s *Source) Wait(ctx context.Context, until time.Time) (wake.Wake, error) {
	halt := s.arm()
	c := clock.Or(s.Clock)
	m := sleeptime.Meter{Clock: s.Clock, Kernel: s.Kernel}
	start := m.Mark()
	for {
		now := c.Now().Round(0)
		if !until.IsZero() && !now.Before(until) {
			return wake.Wake{Reason: wake.ReasonTimer, Source: "timer", At: now,
				Detail: "clock reached " + until.UTC().Format(time.RFC3339Nano), Slept: m.Since(start)}, nil
		}
		step := s.step(c, until.Sub(now))
		t := c.NewTimer(step)
		if !until.IsZero() && !c.Now().Before(until) {
			// The clock was set past until between reading it and arming
			// the timer (a wall clock stepped, or a test's clock): the
			// timer counts from the new time, so do not wait for it.
			t.Stop()
			continue
		}
		select {
		case <-t.C():
		case <-halt:
			t.Stop()
			return wake.Wake{}, wake.ErrHalted
		case <-ctx.Done():
			t.Stop()
			return wake.Wake{}, ctx.Err()
		}
	}
}

// step is the next step of a wait on c with left to go.
func (s *Source) step(c clock.Clock, left time.Duration) time.Duration {
	r := s.Recheck
	if r <= 0 {
		r = DefaultRecheck
	}
	if sc, ok := c.(*clock.Scaled); ok {
		if f := float64(r) * sc.Factor(); f < math.MaxInt64 {
			r = time.Duration(f)
		}
	}
	if left <= 0 || left > r { // left <= 0 only for a zero until
		return r
	}
	return left
}

func (s *Source) arm() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.halt = make(chan struct{})
	return s.halt
}

// Halt ends a pending Wait with wake.ErrHalted. A timer holds nothing
// else, so it is inert afterwards.
func (s *Source) Halt() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.halt != nil {
		close(s.halt)
		s.halt = nil
	}
	return nil
}

var _ wake.Source = (*Source)(nil)

// KeepsProcess implements what wake.KeepsProcess asks: a timer waits in
// process.
func (s *Source) KeepsProcess() bool { return true }
