// Wake sources: the Source interface every source implements (wake/timer,
// wake/rtc, wake/gpio), the typed Reason a wake reports and the First
// combinator for several sources at once. The package comment is in mode.go.

package wake

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/wake/sleeptime"
)

// ErrHalted is returned by Source.Wait when Halt interrupted the wait.
var ErrHalted = errors.New("wake: source halted")

// Reason says what ended a sleep.
type Reason uint8

const (
	// ReasonUnknown is a wake by something no configured source accounts
	// for: an external event (a key, a network wakeup, a spurious
	// interrupt) or a kernel that does not say which interrupt woke it.
	ReasonUnknown Reason = iota
	// ReasonTimer is a wait on the injected clock that reached its deadline.
	ReasonTimer
	// ReasonRTC is the RTC wake alarm.
	ReasonRTC
	// ReasonGPIO is an edge on a GPIO line (in process, or a gpio-keys
	// wakeup source that ended a suspend).
	ReasonGPIO
)

var reasonNames = [...]string{"unknown", "timer", "rtc", "gpio"}

// String returns the reason's name: unknown, timer, rtc or gpio.
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// MarshalText implements encoding.TextMarshaler.
func (r Reason) MarshalText() ([]byte, error) {
	if int(r) >= len(reasonNames) {
		return nil, fmt.Errorf("wake: invalid reason %d", uint8(r))
	}
	return []byte(r.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler; it accepts the names
// String returns, and "external" for ReasonUnknown.
func (r *Reason) UnmarshalText(b []byte) error {
	p, err := ParseReason(string(b))
	if err != nil {
		return err
	}
	*r = p
	return nil
}

// ParseReason returns the reason named s.
func ParseReason(s string) (Reason, error) {
	if strings.EqualFold(s, "external") {
		return ReasonUnknown, nil
	}
	for i, n := range reasonNames {
		if strings.EqualFold(s, n) {
			return Reason(i), nil
		}
	}
	return 0, fmt.Errorf("wake: unknown reason %q (want one of %s)", s, strings.Join(reasonNames[:], ", "))
}

// Wake is what a source reports when a sleep ends.
type Wake struct {
	Reason Reason
	// Source names the source that reported the wake, e.g. "timer",
	// "rtc0" or "gpio:WAKE_BTN".
	Source string
	// At is the wall-clock time at which the sleep ended, with no
	// monotonic reading.
	At time.Time
	// IRQ is the interrupt the kernel reported as the wakeup
	// (/sys/power/pm_wakeup_irq), or 0 when none was reported.
	IRQ int
	// Detail says how the reason was determined, for the operator.
	Detail string
	// Slept is how long the wait lasted by the wall clock, CLOCK_BOOTTIME
	// (which counts time suspended) and CLOCK_MONOTONIC.
	Slept sleeptime.Span
}

// Source is one way of being woken. Implementations: timer.Source,
// rtc.Source, gpio.Source.
type Source interface {
	// Wait arms the source and blocks until it fires, Halt is called
	// (ErrHalted) or ctx is done (ctx.Err()). until is the wall-clock time
	// a timed source (timer, RTC) fires at; event sources (GPIO) ignore it.
	// A source that suspends the system returns after the resume, with the
	// reason it found, which may be another source's (a gpio-keys press
	// ending an RTC-armed suspend) or ReasonUnknown.
	Wait(ctx context.Context, until time.Time) (Wake, error)
	// Halt disarms the source and returns it to an inert state, ending a
	// pending Wait. It is safe to call at any time, more than once.
	Halt() error
}

// First waits on every source at once; the first to fire wins. The others
// are cancelled and every source is halted before First returns, so none
// stays armed. A source that fails ends the wait with its error, wrapped
// with the source's position, since a broken wake source must not be
// mistaken for a quiet one. With no sources First returns an error. If a
// source fails to halt after another fired, First returns the wake together
// with the halt error: the wake happened, but a source may still be armed.
func First(parent context.Context, until time.Time, sources ...Source) (Wake, error) {
	if len(sources) == 0 {
		return Wake{}, errors.New("wake: no wake sources")
	}
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	type result struct {
		i   int
		w   Wake
		err error
	}
	results := make(chan result, len(sources))
	var wg sync.WaitGroup
	for i, s := range sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := s.Wait(ctx, until)
			results <- result{i, w, err}
		}()
	}
	r := <-results
	cancel()
	var halts []error
	for i, s := range sources {
		if err := s.Halt(); err != nil {
			halts = append(halts, fmt.Errorf("wake: halting source %d: %w", i, err))
		}
	}
	wg.Wait()
	if r.err != nil {
		if parent.Err() != nil && errors.Is(r.err, parent.Err()) {
			// Cancelled from outside: report the caller's error as is.
			return Wake{}, errors.Join(append([]error{r.err}, halts...)...)
		}
		return Wake{}, errors.Join(append([]error{fmt.Errorf("wake: source %d: %w", r.i, r.err)}, halts...)...)
	}
	return r.w, errors.Join(halts...)
}

// Any is a Source made of several: its Wait is First over them, its Halt
// halts each.
type Any []Source

// Wait implements Source.
func (a Any) Wait(ctx context.Context, until time.Time) (Wake, error) { return First(ctx, until, a...) }

// Halt implements Source.
func (a Any) Halt() error {
	var errs []error
	for _, s := range a {
		errs = append(errs, s.Halt())
	}
	return errors.Join(errs...)
}

// KeepsProcess reports whether the process lives through s's sleep (a
// timer, a suspend to RAM or to idle, an edge awaited in process): then
// what the agent holds in memory is still there when s wakes it. A Source
// says so with a KeepsProcess method; one without it, or whose sleep
// powers the system off, does not keep the process, and the agent commits
// what it would otherwise keep for its next wake's transaction before it
// sleeps.
func KeepsProcess(s Source) bool {
	k, ok := s.(interface{ KeepsProcess() bool })
	return ok && k.KeepsProcess()
}

// KeepsProcess reports whether every source of a keeps the process
// (wake.KeepsProcess).
func (a Any) KeepsProcess() bool {
	for _, s := range a {
		if !KeepsProcess(s) {
			return false
		}
	}
	return true
}
