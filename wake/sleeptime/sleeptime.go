// Package sleeptime measures how long a device slept and notices that it
// did, from the clocks that keep counting through a suspend.
//
// Go's time.Since and timers run on CLOCK_MONOTONIC, which on Linux stops
// while the system is suspended (s2idle with the tick frozen, or S3). A
// sleeping agent that measured its sleep with it would see none. This
// package reads CLOCK_BOOTTIME (monotonic, but counting time suspended) with
// unix.ClockGettime, no cgo, next to CLOCK_MONOTONIC and the wall clock
// (with its monotonic reading stripped, as the time package docs advise):
//
//   - Boot − Mono over an interval is the time spent suspended. It is exact
//     where the monotonic clock stops, and zero where it does not (QEMU's
//     virt machine keeps it running through s2idle), so Boot alone is the
//     measure of "time asleep".
//   - Wall − Boot over an interval is a wall-clock step: NTP, fake-hwclock
//     or an RTC read at boot setting the time.
//
// A power-off is not visible here: CLOCK_BOOTTIME restarts at boot, and the
// agent resumes its cycle from what it stored.
package sleeptime

import (
	"time"

	"github.com/torpor-dev/torpor/clock"
)

// Reading is one reading of the kernel clocks, as durations since boot.
type Reading struct {
	// Boot is CLOCK_BOOTTIME: time since boot, including time suspended.
	Boot time.Duration
	// Mono is CLOCK_MONOTONIC: time since boot, excluding time suspended
	// where the kernel stops it.
	Mono time.Duration
}

// Kernel reads the kernel clocks. System is the real one; tests use
// waketest.KernelClock.
type Kernel interface {
	Read() Reading
}

// System reads the kernel's clocks with clock_gettime(2).
var System Kernel = systemKernel{}

// Mark is a point in time on all three clocks.
type Mark struct {
	Wall time.Time // wall clock, no monotonic reading
	Reading
}

// Span is the time between two marks on each clock.
type Span struct {
	Wall time.Duration `json:"wall"`
	Boot time.Duration `json:"boot"`
	Mono time.Duration `json:"mono"`
}

// Suspended returns the time the system spent suspended during the span:
// CLOCK_BOOTTIME's advance beyond CLOCK_MONOTONIC's, never negative.
func (s Span) Suspended() time.Duration { return max(s.Boot-s.Mono, 0) }

// WallStep returns how far the wall clock moved beyond CLOCK_BOOTTIME
// during the span: positive when it was set forward, negative when set back.
func (s Span) WallStep() time.Duration { return s.Wall - s.Boot }

// Meter takes marks. The zero value uses the real clocks.
type Meter struct {
	Clock  clock.Clock // wall clock; nil means clock.Real
	Kernel Kernel      // kernel clocks; nil means System
}

// Mark returns the current time on every clock.
func (m Meter) Mark() Mark {
	k := m.Kernel
	if k == nil {
		k = System
	}
	return Mark{Wall: clock.Or(m.Clock).Now().Round(0), Reading: k.Read()}
}

// Since returns the span from a to now.
func (m Meter) Since(a Mark) Span { return m.Mark().Sub(a) }

// Sub returns the span from a to b.
func (b Mark) Sub(a Mark) Span {
	return Span{Wall: b.Wall.Sub(a.Wall), Boot: b.Boot - a.Boot, Mono: b.Mono - a.Mono}
}

// Detector notices a resume or a wall-clock step between two of its calls.
// Call Check from a loop that runs at least as often as Threshold; it is
// not safe for concurrent use.
type Detector struct {
	Meter Meter
	// Threshold is the suspended time or wall-clock step that counts as an
	// event. Zero means 2 seconds.
	Threshold time.Duration

	last  Mark
	valid bool
}

// Event is what Check found since its previous call.
type Event struct {
	Span Span
	// Resumed is set when the system was suspended for more than the
	// threshold.
	Resumed bool
	// Stepped is set when the wall clock moved by more than the threshold
	// against CLOCK_BOOTTIME (set forward or back).
	Stepped bool
}

// Check takes a mark and compares it with the previous one. The first call
// only takes the mark and reports nothing.
func (d *Detector) Check() Event {
	now := d.Meter.Mark()
	defer func() { d.last, d.valid = now, true }()
	if !d.valid {
		return Event{}
	}
	th := d.Threshold
	if th == 0 {
		th = 2 * time.Second
	}
	s := now.Sub(d.last)
	step := s.WallStep()
	return Event{Span: s, Resumed: s.Suspended() > th, Stepped: step > th || step < -th}
}
