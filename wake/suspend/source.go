package suspend

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/wake"
)

// Source suspends with no alarm of its own: the system sleeps until a
// gpio-keys wakeup source the board declares (or anything else) wakes it.
// With State PowerOff it halts a board that an external power controller
// or a button brings back (a halted Pi 1–4 boots when GPIO3 goes low). It
// implements wake.Source; to combine with an RTC alarm use rtc.Source,
// which takes the same Keys.
type Source struct {
	System *System
	// State is freeze (the default), mem or poweroff.
	State State
	// Keys names the gpio-keys buttons (their labels) whose interrupt
	// means wake.ReasonGPIO.
	Keys []string
	// Clock stamps a wake that did not suspend; nil means clock.Real.
	Clock clock.Clock
}

// Wait implements wake.Source. until is ignored: nothing here fires on
// time. ctx is honoured only before the suspend.
func (s *Source) Wait(ctx context.Context, _ time.Time) (wake.Wake, error) {
	st := s.State
	if st == "" {
		st = Freeze
	}
	res, err := s.System.Suspend(ctx, st)
	if errors.Is(err, ErrWakeupPending) {
		return wake.Wake{Reason: wake.ReasonUnknown, Source: "suspend", At: clock.Or(s.Clock).Now().Round(0),
			Detail: "suspend cancelled by a pending wakeup event: " + err.Error()}, nil
	}
	if err != nil {
		return wake.Wake{}, err
	}
	w := wake.Wake{Reason: wake.ReasonUnknown, Source: "suspend", At: res.At, IRQ: res.IRQ, Slept: res.Slept,
		Detail: "no wakeup IRQ reported"}
	if res.IRQ != 0 {
		w.Detail = "pm_wakeup_irq=" + strconv.Itoa(res.IRQ) + " (" + strings.Join(res.Actions, ",") + ")"
		w.Source = strings.Join(res.Actions, ",")
		if res.Matches(s.Keys...) {
			w.Reason, w.Source = wake.ReasonGPIO, "gpio-keys:"+w.Source
		}
	}
	return w, nil
}

// Halt implements wake.Source; a suspend holds nothing armed.
func (s *Source) Halt() error { return nil }

var _ wake.Source = (*Source)(nil)

// KeepsProcess implements what wake.KeepsProcess asks: a suspend (freeze,
// mem) keeps the process, a power-off does not.
func (s *Source) KeepsProcess() bool { return s.State != PowerOff }
