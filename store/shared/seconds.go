package shared

import (
	"context"
	"fmt"

	"github.com/torpor-dev/torpor/wake"
)

// WakeSeconds is the relays' count of wake seconds (wake.Seconds): the
// second of its wake minute that each agent opens its window at, so that
// a new agent gets the least-loaded second of its minute. Shared, every
// relay of a fleet assigns from the same count.
type WakeSeconds interface {
	// Assign returns agent's second in minute (0–59): the one counted
	// for it there, else the least-loaded second of minute, the first
	// such at or after wake.WakeSecond(agent), which it then counts.
	Assign(ctx context.Context, agent string, minute int) (int, error)
	// Count counts each agent at its slot, as assigned before (by this
	// relay before a restart, or by another), moving it within its
	// minute if it was counted at another second.
	Count(ctx context.Context, slots map[string]Slot) error
	// Forget stops counting agent, whose window opened in minute.
	Forget(ctx context.Context, agent string, minute int) error
	// Load returns how many agents are counted at minute and second.
	Load(ctx context.Context, minute, second int) (int, error)
}

// Slot is a wake minute and second, 0–59 each.
type Slot struct{ Minute, Second int }

// Check returns an error for a minute or second outside 0–59.
func (s Slot) Check() error {
	if s.Minute < 0 || s.Minute > 59 || s.Second < 0 || s.Second > 59 {
		return fmt.Errorf("shared: wake second %d of minute %d, outside 0-59", s.Second, s.Minute)
	}
	return nil
}

// WakeSeconds returns the Memory's count of wake seconds.
func (m *Memory) WakeSeconds() WakeSeconds { return (*memSeconds)(&m.seconds) }

type memSeconds wake.Seconds

func (s *memSeconds) Assign(_ context.Context, agent string, minute int) (int, error) {
	return (*wake.Seconds)(s).Assign(agent, minute)
}

func (s *memSeconds) Count(_ context.Context, slots map[string]Slot) error {
	for agent, at := range slots {
		if err := at.Check(); err != nil {
			return err
		}
		if err := (*wake.Seconds)(s).Set(agent, at.Minute, at.Second); err != nil {
			return err
		}
	}
	return nil
}

func (s *memSeconds) Forget(_ context.Context, agent string, _ int) error {
	(*wake.Seconds)(s).Forget(agent)
	return nil
}

func (s *memSeconds) Load(_ context.Context, minute, second int) (int, error) {
	if err := (Slot{Minute: minute, Second: second}).Check(); err != nil {
		return 0, err
	}
	return (*wake.Seconds)(s).Load(minute, second), nil
}

// Assigned is the agents counted in one minute, by agent, as a shared
// store keeps them; Assign and Count are its rules.
type Assigned map[string]int

// Assign returns agent's second in a, assigning it the least-loaded one
// when it has none (changed true).
func (a Assigned) Assign(agent string) (second int, changed bool) {
	if s, ok := a[agent]; ok {
		return s, false
	}
	var load [60]int32
	for _, s := range a {
		load[s]++
	}
	s := wake.LeastLoaded(&load, wake.WakeSecond(agent))
	a[agent] = s
	return s, true
}
