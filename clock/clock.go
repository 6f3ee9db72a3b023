// Package clock is the time source every Torpor component takes by injection.
//
// Runtime, wake and transport code never call time.Now, time.Sleep,
// time.After or time.NewTimer directly: they hold a Clock, and a nil Clock
// means Real. Tests drive a clocktest.Clock forward with Advance, so no test
// waits for wall time to pass.
//
// Scaled compresses time for demonstrations and system tests: with a factor
// of 120 an hour's wake cycle passes in 30 seconds of real time, and every
// component that takes the clock (schedules, Retry-After, TTLs, timers) sees
// the same compressed hour. It is an option of the binaries (--time-scale),
// not demo-only code.
//
// # Which clock a wait runs on
//
// One rule decides it. A wait that is part of the device's schedule (a
// window, the backoff between attempts inside a window, a Retry-After, a
// TTL, the time until the next wake) runs on the injected clock, so
// --time-scale compresses it with the day. A wait for something outside
// the process to answer (a dial, a publish, a flush, a broker's
// acknowledgement, the device's answer to a live request, the application's
// handler) measures the network or the peer, not the day: it runs in real
// time, never on a scaled clock, so a time scale does not make it fire
// early. Such a wait is made with WithTimeout on Unscaled(clock), which a
// test's fake clock still drives. The one kind of wait left on
// context.WithTimeout, the same real time in production, is a connection's
// own background housekeeping: subscribing when an MQTT connection comes
// up, status and reply publications, the link's pings, notices and answer
// writes. Each runs in a goroutine of its own, bounds only that goroutine
// and only logs a failure, and a test's fake clock, often advanced by hours
// at a stroke, would cut it off mid-flight. Code that holds no Clock
// (torporctl's commands, the demo orchestrator, the harnesses under test/)
// uses context.WithTimeout too.
package clock

import (
	"context"
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	// Now returns the current wall-clock time.
	Now() time.Time
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer that Torpor uses.
type Timer interface {
	// C returns the channel on which the timer delivers the time it fired.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether it stopped
	// the timer before it fired.
	Stop() bool
}

// Real is the system clock.
var Real Clock = realClock{}

// Or returns c, or Real when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Real
	}
	return c
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }

// Sleep waits for d on c, or until ctx is done. It returns ctx.Err() when
// the context ended first and nil otherwise.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := Or(c).NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// Since returns the wall-clock time elapsed since t on c. The monotonic
// reading is stripped from both sides so that a suspend, during which the
// monotonic clock may stop, is counted (see the time package docs).
func Since(c Clock, t time.Time) time.Duration {
	return Or(c).Now().Round(0).Sub(t.Round(0))
}
