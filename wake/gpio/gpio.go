// Package gpio wakes the agent on an edge of a GPIO line (a PIR sensor, a
// button, an external power controller's "wake" output), through periph.io:
// any gpio.PinIn, in production a line of periph.io/x/host/v3's gpioioctl
// driver (the Linux GPIO character device, v2 uAPI), in tests
// periph.io/x/conn/v3/gpio/gpiotest.Pin.
//
// This is an in-process wait: the agent stays up and blocks on the line. A
// character-device edge request does not wake a suspended system (verified
// on Linux 6.1: the edge is queued and read after some other wake). To
// wake from suspend on a GPIO the kernel must own the line as a gpio-keys
// button marked wakeup-source, declared by the board profile (a
// device-tree overlay); the suspend is then entered by wake/rtc or
// wake/suspend and the gpio-keys interrupt is reported as
// wake.ReasonGPIO there. The line is then the kernel's and cannot also be
// requested here.
package gpio

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/sleeptime"
	"periph.io/x/conn/v3/gpio"
)

// DefaultPoll bounds one WaitForEdge call when Source.Poll is zero. periph
// drivers disagree on what a zero timeout means (forever for gpioioctl,
// "do not wait" for gpiotest), so the source always passes a finite one and
// loops.
const DefaultPoll = 10 * time.Second

// Source waits for an edge on a pin. It implements wake.Source.
type Source struct {
	// Pin is the line to watch, e.g. gpioreg.ByName("GPIO3") after
	// host.Init, gpioioctl.Chips[0].ByNumber(3), or a gpiotest.Pin.
	Pin gpio.PinIn
	// Pull is the bias to request (gpio.PullUp for a button to ground).
	Pull gpio.Pull
	// Edge is the edge that wakes: gpio.FallingEdge for a button to
	// ground; gpio.NoEdge means gpio.BothEdges.
	Edge gpio.Edge
	// Poll bounds each WaitForEdge call; zero means DefaultPoll.
	Poll time.Duration
	// Clock stamps the wake; nil means clock.Real.
	Clock clock.Clock
	// Kernel reads CLOCK_BOOTTIME for Wake.Slept; nil means the system's.
	Kernel sleeptime.Kernel

	mu sync.Mutex
	// mu guards all following fields.
	cur *waitState // the pending Wait's state, nil when none
}

// waitState belongs to one Wait and its goroutine, so that a stop request
// can never reach a later Wait.
type waitState struct {
	stopped atomic.Bool
}

// Name returns "gpio:" and the pin's name, or its number when the line has
// no name.
func (s *Source) Name() string {
	if n := s.Pin.Name(); n != "" {
		return "gpio:" + n
	}
	return fmt.Sprintf("gpio:%d", s.Pin.Number())
}

// Wait implements wake.Source: it configures the pin for edge detection
// (which drops edges that arrived before) and returns wake.ReasonGPIO at
// the first edge. until is ignored: a GPIO has no deadline of its own;
// combine it with a timed source through wake.First. When ctx ends or Halt
// is called, Wait halts the pin and returns once its WaitForEdge has
// returned: immediately with gpioioctl, after at most Poll with a pin whose
// Halt does not interrupt.
func (s *Source) Wait(ctx context.Context, _ time.Time) (wake.Wake, error) {
	if s.Pin == nil {
		return wake.Wake{}, errors.New("gpio: no pin configured")
	}
	edge := s.Edge
	if edge == gpio.NoEdge {
		edge = gpio.BothEdges
	}
	st, err := s.begin()
	if err != nil {
		return wake.Wake{}, err
	}
	defer s.end()
	if err := s.Pin.In(s.Pull, edge); err != nil {
		return wake.Wake{}, fmt.Errorf("gpio: configuring %s for %s: %w", s.Name(), edge, err)
	}
	m := sleeptime.Meter{Clock: s.Clock, Kernel: s.Kernel}
	start := m.Mark()
	got := make(chan bool, 1)
	go func() { got <- s.waitEdge(st) }()
	select {
	case ok := <-got:
		if !ok {
			return wake.Wake{}, wake.ErrHalted
		}
		lvl := s.Pin.Read()
		return wake.Wake{Reason: wake.ReasonGPIO, Source: s.Name(), At: clock.Or(s.Clock).Now().Round(0),
			Detail: fmt.Sprintf("%s on %s, level %s", edge, s.Name(), lvl), Slept: m.Since(start)}, nil
	case <-ctx.Done():
		st.stopped.Store(true)
		_ = s.Pin.Halt()
		<-got
		return wake.Wake{}, ctx.Err()
	}
}

// waitEdge loops on WaitForEdge until an edge or a stop request.
func (s *Source) waitEdge(st *waitState) bool {
	poll := s.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	for {
		edge := s.Pin.WaitForEdge(poll)
		if st.stopped.Load() {
			return false
		}
		if edge {
			return true
		}
	}
}

func (s *Source) begin() (*waitState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		return nil, errors.New("gpio: Wait called while another Wait is pending")
	}
	s.cur = &waitState{}
	return s.cur, nil
}

func (s *Source) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = nil
}

// Halt ends a pending Wait with wake.ErrHalted and halts the pin.
func (s *Source) Halt() error {
	if s.Pin == nil {
		return nil
	}
	s.mu.Lock()
	if s.cur != nil {
		s.cur.stopped.Store(true)
	}
	s.mu.Unlock()
	return s.Pin.Halt()
}

var _ wake.Source = (*Source)(nil)

// KeepsProcess implements what wake.KeepsProcess asks: the edge is
// awaited in process.
func (s *Source) KeepsProcess() bool { return true }
