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
