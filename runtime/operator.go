package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/wake"
)

// What a management channel (runtime/manage) reads of and asks from the
// agent, besides Mode, SetMode, Window, SetWindow, Extend, Drain and
// Pipeline.

// Config returns the agent's configuration as New received it.
func (a *Agent) Config() Config { return a.cfg }

// Clock returns the agent's clock (Config.Clock, or clock.Real).
func (a *Agent) Clock() clock.Clock { return a.clock }

// WindowLength returns the length of the hourly window in force.
func (a *Agent) WindowLength() time.Duration { return a.windowLength() }

// NextWake returns the next wake the wake in progress planned, or, in
// sleep mode, the wake an operator scheduled; zero for none.
func (a *Agent) NextWake() time.Time {
	a.mu.Lock()
	cur := a.cur
	a.mu.Unlock()
	var next time.Time
	if cur != nil {
		_, next = cur.schedule()
	}
	if m, sched := a.Mode(); next.IsZero() && m == wake.Sleep {
		next = sched
	}
	return next
}

// ErrNoKeyPackages is returned by RefillKeyPackages when the agent has no
// MLS KeyPackage pool.
var ErrNoKeyPackages = errors.New("runtime: no MLS KeyPackage pool")

// RefillKeyPackages makes the KeyPackage pool hold target unused
// KeyPackages (zero: the configured target) and returns how many the relay
// has not been given yet; they go to it with the next state the agent
// publishes.
func (a *Agent) RefillKeyPackages(ctx context.Context, target int) (int, error) {
	if a.cfg.MLS.KeyPackages == nil {
		return 0, ErrNoKeyPackages
	}
	if target == 0 {
		target = a.cfg.kpTarget()
	}
	kps, err := a.cfg.MLS.KeyPackages.Refill(ctx, target)
	return len(kps), err
}
