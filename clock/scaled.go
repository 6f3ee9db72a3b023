package clock

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Scaled is a clock on which time passes Factor times faster than on Base,
// starting from Base's time at Epoch. Durations given to NewTimer are in
// scaled time: on a Scaled clock with Factor 60, NewTimer(time.Minute) fires
// after one real second.
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
	if err := CheckScale(factor); err != nil {
		return nil, fmt.Errorf("clock: %w", err)
	}
	base = Or(base)
	if factor == 1 {
		return base, nil
	}
	return &Scaled{base: base, factor: factor, epoch: base.Now().Round(0)}, nil
}

// Now returns the scaled time. It stops about 292 years after the clock was
// made, the longest time.Duration: at the largest factor, after some 25
// hours of base time. It never wraps around to a time before that.
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
