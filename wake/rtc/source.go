package rtc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/sleeptime"
	"github.com/torpor-dev/torpor/wake/suspend"
)

// Source arms an RTC alarm and suspends the system until something wakes
// it. It implements wake.Source.
type Source struct {
	// Alarm is the RTC to arm. Its Clock is the wall clock used here too.
	Alarm *Alarm
	// System suspends; nil means &suspend.System{Sys: Alarm.Sys,
	// WriteFile: Alarm.WriteFile}.
	System *suspend.System
	// State is the sleep state: freeze (the default), mem or poweroff.
	State suspend.State
	// Keys names the gpio-keys buttons (their labels, which the kernel
	// uses as the IRQ handler name) that the board profile declares as
	// wakeup sources: a resume by one of them reports wake.ReasonGPIO.
	Keys []string

	mu     sync.Mutex
	halted bool // Halt was called during the current Wait
}

func (s *Source) system() *suspend.System {
	if s.System != nil {
		return s.System
	}
	return &suspend.System{Sys: s.Alarm.Sys, WriteFile: s.Alarm.WriteFile, Meter: sleeptime.Meter{Clock: s.Alarm.Clock}}
}

func (s *Source) state() suspend.State {
	if s.State == "" {
		return suspend.Freeze
	}
	return s.State
}

// ErrNeverWakes is returned by Wait for a power-off with no deadline (a
// zero until) and no wakeup key: nothing could ever bring the system back.
var ErrNeverWakes = errors.New("rtc: powering off with no alarm and no wakeup key (gpio-keys) would never come back; schedule a wake or add a wakeup key")

// Wait implements wake.Source: it arms the alarm for until, suspends, and
// after the resume disarms the alarm and reports the reason. The reason
// comes from the kernel's wakeup IRQ where it reports one; otherwise the
// RTC is inferred when its time reached the alarm, and the wake is
// reported as wake.ReasonUnknown when it did not. A deadline already
// past returns at once with wake.ReasonRTC, without suspending.
//
// A zero until means no planned wake (sleep mode with nothing scheduled):
// Wait suspends with no alarm armed, until an event ends the suspend (a
// gpio-keys button in Keys, or any other wakeup source of the kernel), as
// suspend.Source does. With State PowerOff it refuses (ErrNeverWakes)
// unless a wakeup key can bring the board back.
//
// A suspend cannot be interrupted once entered: ctx and Halt are honoured
// only before it.
func (s *Source) Wait(ctx context.Context, until time.Time) (wake.Wake, error) {
	s.mu.Lock()
	s.halted = false
	s.mu.Unlock()
	if until.IsZero() {
		return s.waitEvent(ctx)
	}
	name := s.Alarm.DeviceName()
	now := clock.Or(s.Alarm.Clock).Now().Round(0)
	if !until.After(now) {
		return wake.Wake{Reason: wake.ReasonRTC, Source: name, At: now, Detail: "deadline passed before arming"}, nil
	}
	target, err := s.Alarm.Arm(until)
	if err != nil {
		return wake.Wake{}, err
	}
	if err := s.interrupted(ctx); err != nil {
		return wake.Wake{}, errors.Join(err, s.Alarm.Disarm())
	}
	res, err := s.system().Suspend(ctx, s.state())
	if errors.Is(err, suspend.ErrWakeupPending) {
		w := wake.Wake{Reason: wake.ReasonUnknown, Source: name, At: clock.Or(s.Alarm.Clock).Now().Round(0),
			Detail: "suspend cancelled by a pending wakeup event: " + err.Error()}
		return w, s.Alarm.Disarm()
	}
	if err != nil {
		return wake.Wake{}, errors.Join(err, s.Alarm.Disarm())
	}
	w := s.classify(res, target)
	return w, s.Alarm.Disarm()
}

// waitEvent suspends with no alarm armed; only an event ends the sleep.
func (s *Source) waitEvent(ctx context.Context) (wake.Wake, error) {
	if s.state() == suspend.PowerOff && len(s.Keys) == 0 {
		return wake.Wake{}, ErrNeverWakes
	}
	if err := s.Alarm.Disarm(); err != nil { // no alarm left from before may end this sleep
		return wake.Wake{}, err
	}
	if err := s.interrupted(ctx); err != nil {
		return wake.Wake{}, err
	}
	res, err := s.system().Suspend(ctx, s.state())
	if errors.Is(err, suspend.ErrWakeupPending) {
		return wake.Wake{Reason: wake.ReasonUnknown, Source: s.Alarm.DeviceName(), At: clock.Or(s.Alarm.Clock).Now().Round(0),
			Detail: "suspend cancelled by a pending wakeup event: " + err.Error()}, nil
	}
	if err != nil {
		return wake.Wake{}, err
	}
	return s.classify(res, time.Time{}), nil
}

func (s *Source) interrupted(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.halted {
		return wake.ErrHalted
	}
	return ctx.Err()
}

// classify names what ended the suspend; target is the alarm armed, zero
// for none.
func (s *Source) classify(res suspend.Resume, target time.Time) wake.Wake {
	w := wake.Wake{Source: s.Alarm.DeviceName(), At: res.At, IRQ: res.IRQ, Slept: res.Slept}
	irq := fmt.Sprintf("pm_wakeup_irq=%d (%s)", res.IRQ, strings.Join(res.Actions, ","))
	switch {
	case res.IRQ != 0 && res.Matches(s.rtcNames()...):
		w.Reason, w.Detail = wake.ReasonRTC, irq
	case res.IRQ != 0 && res.Matches(s.Keys...):
		w.Reason, w.Detail = wake.ReasonGPIO, irq
		w.Source = "gpio-keys:" + strings.Join(res.Actions, ",")
	case res.IRQ != 0:
		w.Reason, w.Detail = wake.ReasonUnknown, irq
		w.Source = strings.Join(res.Actions, ",")
	case target.IsZero():
		w.Reason, w.Detail = wake.ReasonUnknown, "no wakeup IRQ reported, and no alarm was armed"
	default:
		w.Reason, w.Detail = s.infer(target)
	}
	return w
}

// rtcNames are the IRQ handler names that mean this RTC: any handler with
// "rtc" as a word (rtc-pl031, rtc-ds1307 ...) and the driver name sysfs
// shows for this RTC.
func (s *Source) rtcNames() []string {
	names := []string{"rtc"}
	if f := strings.Fields(s.Alarm.Label()); len(f) > 0 {
		names = append(names, f[0])
	}
	return names
}

// infer decides the reason when the kernel did not report a wakeup IRQ:
// the RTC's time reached the alarm, or it did not.
func (s *Source) infer(target time.Time) (wake.Reason, string) {
	now, err := s.Alarm.Now()
	switch {
	case err != nil:
		return wake.ReasonUnknown, "no wakeup IRQ reported and the RTC could not be read: " + err.Error()
	case !now.Before(target):
		return wake.ReasonRTC, fmt.Sprintf("inferred: RTC time %s reached the alarm %s", now.Format(time.RFC3339), target.Format(time.RFC3339))
	default:
		return wake.ReasonUnknown, fmt.Sprintf("no wakeup IRQ reported; RTC time %s is before the alarm %s", now.Format(time.RFC3339), target.Format(time.RFC3339))
	}
}

// Halt disarms the alarm. A Wait that has not yet suspended returns
// wake.ErrHalted.
func (s *Source) Halt() error {
	s.mu.Lock()
	s.halted = true
	s.mu.Unlock()
	return s.Alarm.Disarm()
}

// AfterBoot reports why the system is up when the agent starts after
// powering off with an armed alarm for planned (as it stored before the
// power-off): wake.ReasonRTC when the RTC's time reached planned, less one
// second of tolerance for the RTC's whole seconds, and wake.ReasonUnknown
// (a button, power restored) otherwise.
func (s *Source) AfterBoot(planned time.Time) wake.Wake {
	now := clock.Or(s.Alarm.Clock).Now().Round(0)
	w := wake.Wake{Source: s.Alarm.DeviceName(), At: now}
	rtcNow, err := s.Alarm.Now()
	switch {
	case err != nil:
		w.Detail = "RTC unreadable after boot: " + err.Error()
	case !rtcNow.Add(time.Second).Before(planned):
		w.Reason, w.Detail = wake.ReasonRTC, "inferred after boot: RTC time reached the planned wake "+planned.UTC().Format(time.RFC3339)
	default:
		w.Detail = "booted before the planned wake " + planned.UTC().Format(time.RFC3339)
	}
	return w
}

var _ wake.Source = (*Source)(nil)

// KeepsProcess implements what wake.KeepsProcess asks: a suspend (freeze,
// mem) keeps the process, a power-off does not.
func (s *Source) KeepsProcess() bool { return s.state() != suspend.PowerOff }
