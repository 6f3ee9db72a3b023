package relay

import (
	"context"
	"sync"

	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/shared"
	"github.com/torpor-dev/torpor/wake"
)

// wakeSeconds is the relay's side of wake-second assignment: the seconds
// of its wake minute that each agent it knows opens its window at
// (wake.Seconds), read from the agent store before the first assignment
// and kept up to date as agents publish and are forgotten.
//
// A device derives its second from its DID alone (wake.WakeSecond), and
// 10,000 such devices make a busiest second of about four times the mean
// (docs/performance.md, "Wake storm"). At a device's first state the
// relay assigns it the least-loaded second of the minute its window
// opens in (once it is in hourly_wake mode), keeps it in the agent's record (agents.State.WakeSecond), so
// that it holds across restarts and relays, and sends it in every
// state-ok (wire.Accepted.WakeSecond); the device opens its windows
// there from its next one on and publishes the second in its window's
// offset, so Retry-After and the card follow. The count is the relay's
// shared memory (Config.Stores.Shared): on JetStream one count for the
// fleet, so relays assigning at the same time spread their agents as one
// relay would. It is filled from the agent store before the first
// assignment (for agents assigned before the count was shared) and with
// each agent whose state a relay handles since.
type wakeSeconds struct {
	mu     sync.Mutex // held while loading
	loaded bool
	s      shared.WakeSeconds
}

// assignWakeSecond sets next's wake second: prev's, when the relay
// assigned one before (counted again, in case another relay sharing the
// store assigned it), else, in hourly_wake mode, the least-loaded second
// of next's window's minute. A device in another mode does not link at
// its window's second, so it gets none until it switches to hourly_wake.
func (s *Relay) assignWakeSecond(ctx context.Context, agent string, prev agents.State, next *agents.State) error {
	minute := next.Window.Minute
	if prev.WakeSecondSet {
		next.WakeSecond, next.WakeSecondSet = prev.WakeSecond, true
		return s.seconds.s.Count(ctx, map[string]shared.Slot{agent: {Minute: minute, Second: prev.WakeSecond}})
	}
	if next.Mode != wake.HourlyWake {
		return nil
	}
	if err := s.loadWakeSeconds(ctx); err != nil {
		return err
	}
	sec, err := s.seconds.s.Assign(ctx, agent, minute)
	if err != nil {
		return err
	}
	next.WakeSecond, next.WakeSecondSet = sec, true
	return nil
}

// loadWakeSeconds counts the assigned second of every agent in the store,
// once (again after a failure).
func (s *Relay) loadWakeSeconds(ctx context.Context) error {
	s.seconds.mu.Lock()
	defer s.seconds.mu.Unlock()
	if s.seconds.loaded {
		return nil
	}
	slots := map[string]shared.Slot{}
	err := agents.EachState(ctx, s.cfg.Stores.States, func(id string, st agents.State) error {
		addWakeSecond(slots, id, st)
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.seconds.s.Count(ctx, slots); err != nil {
		return err
	}
	s.seconds.loaded = true
	return nil
}

// addWakeSecond adds agent's assigned second to slots, if it has one.
func addWakeSecond(slots map[string]shared.Slot, agent string, st agents.State) {
	if st.WakeSecondSet {
		slots[agent] = shared.Slot{Minute: st.Window.Minute, Second: st.WakeSecond}
	}
}
