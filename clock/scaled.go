package clock

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Scaled is a clock on which time passes Factor times faster than on Base,
// from the epoch at which the two agree:
//
//	scaled = epoch + (base − epoch) × Factor
//
// Durations given to NewTimer are in scaled time: on a Scaled clock with
// Factor 60, NewTimer(time.Minute) fires after one real second. Two
// processes (a relay and an agent, possibly on different machines) whose
// scaled clocks share the factor and the epoch (NewScaledAt) agree on the
// time up to their base clocks' offset times the factor.
type Scaled struct {
	base   Clock
	factor float64
	epoch  time.Time // base time at which scaled time equals base time
}

// The range of time scales: from real time to a day in under a second.
const (
	MinScale = 1
	MaxScale = 100000
)

// CheckScale returns an error saying so when factor is not a time scale
// NewScaled accepts: NaN, infinities and anything outside [MinScale,
// MaxScale].
func CheckScale(factor float64) error {
	if !(factor >= MinScale && factor <= MaxScale) { // NaN fails both
		return fmt.Errorf("time scale %v is out of range: want a number from %d (real time) to %d", factor, MinScale, MaxScale)
	}
	return nil
}

// ParseScale reads a time scale, as for a --time-scale flag, and checks it
// with CheckScale.
func ParseScale(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("time scale %q is not a number: want a number from %d (real time) to %d", s, MinScale, MaxScale)
	}
	return f, CheckScale(f)
}

// NewScaled returns a clock running factor times faster than base, which
// agrees with base at the moment it is made. A factor of 1 returns base
// itself. It returns CheckScale's error for a factor out of range.
func NewScaled(base Clock, factor float64) (Clock, error) {
	return NewScaledAt(base, factor, time.Time{})
}

// NewScaledAt returns a clock running factor times faster than base, which
// agrees with base at epoch (a zero epoch means the moment it is made), so
// that clocks made at different moments, in different processes, with the
// same factor and epoch show the same time. The epoch may be in the past
// or the future; before it, scaled time runs behind base time. A factor of
// 1 returns base itself, whatever the epoch. It returns CheckScale's error
// for a factor out of range.
func NewScaledAt(base Clock, factor float64, epoch time.Time) (Clock, error) {
	if err := CheckScale(factor); err != nil {
		return nil, fmt.Errorf("clock: %w", err)
	}
	base = Or(base)
	if factor == 1 {
		return base, nil
	}
	if epoch.IsZero() {
		epoch = base.Now()
	}
	return &Scaled{base: base, factor: factor, epoch: epoch.Round(0)}, nil
}

// ParseEpoch reads the epoch of a scaled clock, as for a --time-epoch
// flag: an RFC 3339 time (fractional seconds allowed, such as
// 2026-12-03T18:00:00.123456789Z) or Unix seconds with up to nine decimals
// (1796320800.123456789, as date +%s.%N prints). An empty string is the
// zero time: the moment the clock is made.
func ParseEpoch(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	sec, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err == nil && len(frac) <= 9 && strings.Trim(frac, "0123456789") == "" && !strings.HasPrefix(sec, "+") {
		ns, _ := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		if n >= 0 && n < 1<<33 { // before the year 2242: a date, not a typo
			return time.Unix(n, ns).UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("time epoch %q: want an RFC 3339 time (2026-12-03T18:00:00.5Z) or Unix seconds (1796320800.5)", s)
}

// Now returns the scaled time. It stops about 292 years after the epoch,
// the longest time.Duration: at the largest factor, after some 25 hours of
// base time. It never wraps around to a time before that.
func (s *Scaled) Now() time.Time {
	real := s.base.Now().Round(0).Sub(s.epoch)
	return s.epoch.Add(scale(real, s.factor))
}

// scale returns d times factor, clamped to the range of time.Duration: Go
// leaves the conversion of an out-of-range float64 to an integer to the
// implementation, and on amd64 it wraps to the most negative Duration,
// which would send the clock back some 292 years.
func scale(d time.Duration, factor float64) time.Duration {
	f := float64(d) * factor
	switch {
	case f >= math.MaxInt64: // 2^63, exactly: larger than any Duration
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return time.Duration(f)
}

// NewTimer returns a timer that fires after d of scaled time.
func (s *Scaled) NewTimer(d time.Duration) Timer {
	return s.base.NewTimer(time.Duration(float64(d) / s.factor))
}

// Epoch returns the base time at which the scaled clock equals its base.
func (s *Scaled) Epoch() time.Time { return s.epoch }

// Factor returns how many times faster than its base the clock runs.
func (s *Scaled) Factor() float64 { return s.factor }

// Base returns the clock the scaled clock runs on.
func (s *Scaled) Base() Clock { return s.base }

// Unscaled returns the clock beneath c when c is a *Scaled, else c (nil
// stays nil, which components read as Real). Timeouts that bound a network
// round trip (a publish, a flush, a broker's answer) measure the network,
// not the device's day: under --time-scale they run on Unscaled(clock), so
// that compressing the day does not make them fire early.
func Unscaled(c Clock) Clock {
	if s, ok := c.(*Scaled); ok {
		return s.base
	}
	return c
}
