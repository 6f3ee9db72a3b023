package clock

import (
	"fmt"
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

// NewScaled returns a clock running factor times faster than base, which
// agrees with base at the moment it is made. A factor of 1 returns base
// itself. It returns an error for a factor below 1 or above 100000.
func NewScaled(base Clock, factor float64) (Clock, error) {
	if factor < 1 || factor > 100000 {
		return nil, fmt.Errorf("clock: time scale %v out of range [1, 100000]", factor)
	}
	base = Or(base)
	if factor == 1 {
		return base, nil
	}
	return &Scaled{base: base, factor: factor, epoch: base.Now().Round(0)}, nil
}

// Now returns the scaled time.
func (s *Scaled) Now() time.Time {
	real := s.base.Now().Round(0).Sub(s.epoch)
	return s.epoch.Add(time.Duration(float64(real) * s.factor))
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
