// Package board builds the wake source a board profile (package boards)
// and the agent's configuration call for: the methods chosen (or the
// board's default), each mapped to its wake/timer, wake/gpio, wake/rtc or
// wake/suspend source, combined with wake.Any when there are several.
//
// Combinations are checked: a suspending method (rtc, rtc-poweroff,
// gpio-keys, poweroff-gpio) stops the whole system, so an in-process
// method (timer, gpio) beside it could never fire; such a configuration is
// refused with an error that says so. So is a time-scaled clock with a
// method that keeps time on the kernel's real clock (rtc, rtc-poweroff,
// poweroff-gpio; see checkScale). rtc with gpio-keys is one source: the
// RTC alarm is armed, and the gpio-keys interrupt is reported as a GPIO
// wake.
package board

import (
	"errors"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/boards"
	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/wake"
	wgpio "github.com/torpor-dev/torpor/wake/gpio"
	"github.com/torpor-dev/torpor/wake/rtc"
	"github.com/torpor-dev/torpor/wake/sleeptime"
	"github.com/torpor-dev/torpor/wake/suspend"
	"github.com/torpor-dev/torpor/wake/timer"
	"periph.io/x/conn/v3/gpio"
)

// Config selects and tunes the sources. The zero value uses the board's
// default method on the real system.
type Config struct {
	// Methods are the wake methods to use; empty means the board's
	// default.
	Methods []boards.Method
	// RTC configures the rtc methods' alarm; zero means the board's RTC,
	// armed through sysfs.
	RTC RTC
	// GPIO configures the gpio method's line; zero means the board's
	// line, pulled up, waking on a falling edge.
	GPIO GPIO

	// Sys, Dev, WriteFile, Ioctls, PowerOff, Clock and Kernel are passed to
	// the sources; tests point them at a waketest.Kernel.
	Sys, Dev  string
	WriteFile func(name string, data []byte) error
	Ioctls    rtc.Ioctls
	PowerOff  func() error
	Clock     clock.Clock
	Kernel    sleeptime.Kernel
}

// RTC configures the rtc methods' alarm.
type RTC struct {
	// Device names the RTC device when the board has none of its own (an
	// RTC HAT on a Pi 0-4 appears as rtc0) or another should be used; ""
	// means the board's.
	Device string
	// Method is how the RTC is armed: sysfs (default) or ioctl.
	Method rtc.Method
}

// GPIO configures the gpio method's line.
type GPIO struct {
	// Pull and Edge configure the line; zero means gpio.PullUp and
	// gpio.FallingEdge (a button or open-drain output to ground).
	Pull gpio.Pull
	Edge gpio.Edge
	// Pin is the line; nil means OpenPin(board).
	Pin gpio.PinIn
	// OpenPin finds the board's wake line; nil means the gpioioctl lookup
	// (OpenLine).
	OpenPin func(boards.Board) (gpio.PinIn, error)
}

// suspending are the methods that stop the system.
var suspending = map[boards.Method]bool{
	boards.RTC: true, boards.RTCPowerOff: true, boards.GPIOKeys: true, boards.PowerOffGPIO: true,
}

// New returns the wake source for b and c.
func New(b boards.Board, c Config) (wake.Source, error) {
	methods := c.Methods
	if len(methods) == 0 {
		methods = []boards.Method{b.Default}
	}
	if err := check(b, methods); err != nil {
		return nil, err
	}
	if err := checkScale(methods, c.Clock); err != nil {
		return nil, err
	}
	has := map[boards.Method]bool{}
	for _, m := range methods {
		has[m] = true
	}
	var out wake.Any
	for _, m := range methods {
		s, err := c.source(b, m, has)
		if err != nil {
			return nil, err
		}
		if s != nil {
			out = append(out, s)
		}
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return out, nil
}

func check(b boards.Board, methods []boards.Method) error {
	var susp, inproc []boards.Method
	seen := map[boards.Method]bool{}
	for _, m := range methods {
		if !b.Supports(m) {
			return fmt.Errorf("board: %s does not support wake method %q (it has %v)", b.Name, m, b.Methods)
		}
		if seen[m] {
			return fmt.Errorf("board: wake method %q given twice", m)
		}
		seen[m] = true
		if suspending[m] {
			susp = append(susp, m)
		} else {
			inproc = append(inproc, m)
		}
	}
	switch {
	case len(susp) > 0 && len(inproc) > 0:
		return fmt.Errorf("board: %v suspend the system, so %v (which wait in process) could never fire; "+
			"for a GPIO wake from suspend use gpio-keys", susp, inproc)
	case len(susp) == 2 && !(seen[boards.GPIOKeys] && (seen[boards.RTC] || seen[boards.RTCPowerOff])):
		return fmt.Errorf("board: %v cannot be combined: only one way of sleeping at a time, plus gpio-keys", susp)
	case len(susp) > 2:
		return fmt.Errorf("board: %v cannot be combined: only one way of sleeping at a time, plus gpio-keys", susp)
	}
	return nil
}

// realTime are the methods that keep time on the kernel's real clock: an
// RTC alarm, or a power-off after which the process (and its clock) starts
// again.
var realTime = map[boards.Method]bool{boards.RTC: true, boards.RTCPowerOff: true, boards.PowerOffGPIO: true}

// checkScale refuses a time-scaled clock (--time-scale) with the methods
// that keep time on the kernel's real clock. An RTC alarm counts whole real
// seconds: at a scale of 240 one is four minutes of the agent's day, so
// the alarm could not open a five-minute window on time, and dividing the
// sleep by the scale would only make the error a whole window wide. A
// power-off restarts the process, whose scaled clock starts again from
// real time. Demonstrations compress time with the timer and gpio methods
// (or gpio-keys, which arms nothing); real suspends run at scale 1.
func checkScale(methods []boards.Method, clk clock.Clock) error {
	sc, ok := clk.(*clock.Scaled)
	if !ok {
		return nil
	}
	var bad []boards.Method
	for _, m := range methods {
		if realTime[m] {
			bad = append(bad, m)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("board: %v keep time on the kernel's real clock, which a time scale cannot compress "+
		"(an RTC alarm counts whole real seconds, %v of the agent's time at a scale of %g; a power-off restarts the scaled clock); "+
		"run at time scale 1, or wake with timer, gpio or gpio-keys", bad, time.Duration(sc.Factor()*float64(time.Second)), sc.Factor())
}

func (c Config) system() *suspend.System {
	return &suspend.System{Sys: c.Sys, WriteFile: c.WriteFile, PowerOff: c.PowerOff,
		Meter: sleeptime.Meter{Clock: c.Clock, Kernel: c.Kernel}}
}

func (c Config) keys(b boards.Board, has map[boards.Method]bool) []string {
	if has[boards.GPIOKeys] || has[boards.PowerOffGPIO] {
		return []string{b.WakeKey}
	}
	return nil
}

// source returns the source for m, or nil when another method's source
// covers it (gpio-keys next to an RTC method).
func (c Config) source(b boards.Board, m boards.Method, has map[boards.Method]bool) (wake.Source, error) {
	switch m {
	case boards.Timer:
		return &timer.Source{Clock: c.Clock, Kernel: c.Kernel}, nil
	case boards.GPIO:
		return c.gpio(b)
	case boards.RTC, boards.RTCPowerOff:
		dev := b.RTC
		if c.RTC.Device != "" {
			dev = c.RTC.Device
		}
		if dev == "" {
			return nil, fmt.Errorf("board: %s has no RTC of its own; name the RTC HAT's device (rtc0) in the configuration", b.Name)
		}
		st := suspend.State(b.Sleep)
		if m == boards.RTCPowerOff {
			st = suspend.PowerOff
		}
		a := &rtc.Alarm{Name: dev, Sys: c.Sys, Dev: c.Dev, Method: c.RTC.Method, Clock: c.Clock,
			WriteFile: c.WriteFile, Ioctls: c.Ioctls}
		return &rtc.Source{Alarm: a, System: c.system(), State: st, Keys: c.keys(b, has)}, nil
	case boards.GPIOKeys:
		if has[boards.RTC] || has[boards.RTCPowerOff] {
			return nil, nil
		}
		return &suspend.Source{System: c.system(), State: suspend.State(b.Sleep), Keys: c.keys(b, has), Clock: c.Clock}, nil
	case boards.PowerOffGPIO:
		return &suspend.Source{System: c.system(), State: suspend.PowerOff, Keys: c.keys(b, has), Clock: c.Clock}, nil
	}
	return nil, fmt.Errorf("board: unknown wake method %q", m)
}

func (c Config) gpio(b boards.Board) (wake.Source, error) {
	pin := c.GPIO.Pin
	if pin == nil {
		open := c.GPIO.OpenPin
		if open == nil {
			open = OpenLine
		}
		p, err := open(b)
		if err != nil {
			return nil, err
		}
		pin = p
	}
	pull, edge := c.GPIO.Pull, c.GPIO.Edge
	if pull == gpio.PullNoChange && edge == gpio.NoEdge {
		pull, edge = gpio.PullUp, gpio.FallingEdge
	}
	return &wgpio.Source{Pin: pin, Pull: pull, Edge: edge, Clock: c.Clock, Kernel: c.Kernel}, nil
}

// ErrNoLine is returned (wrapped) when the board's wake line is not found.
var ErrNoLine = errors.New("board: wake GPIO line not found")
