package wake

import (
	"fmt"
	"sync"
)

// Seconds hands out wake seconds: a relay's view of which second of its
// wake minute each agent it knows opens its window at, so that it can
// give a new agent the least-loaded second of its minute.
//
// WakeSecond, which each device derives from its DID alone, places a
// fleet like balls thrown into bins: with 10,000 devices over the hour's
// 3,600 seconds the busiest second holds about four times the mean
// (docs/performance.md, "Wake storm"). A relay knows its fleet, so it can
// do better: Assign puts each new agent in the second of its minute that
// holds the fewest agents, which keeps every second within one of the
// minute's mean. The device still wakes inside the minute the reference
// derives (WakeMinute); only the second within it is the relay's choice.
//
// Assign is deterministic given what Seconds holds: ties go to the first
// least-loaded second at or after WakeSecond(agent), cyclically, so a
// relay that knows no agent assigns exactly the second the device would
// derive itself. The zero value is empty and ready; its methods are safe
// for concurrent use.
type Seconds struct {
	mu     sync.Mutex
	load   [60][60]int32   // load[minute][second]: agents known there
	agents map[string]slot // where each known agent is counted
}

// slot is a wake minute and second, 0–59 each.
type slot struct{ minute, second uint8 }

// Assign returns the wake second of agent, whose window opens in minute
// (0–59): the second Seconds already holds for it when it holds one in
// that minute; otherwise the least-loaded second of minute, which it then
// counts. It returns an error only for a minute outside 0–59.
func (s *Seconds) Assign(agent string, minute int) (int, error) {
	if minute < 0 || minute > 59 {
		return 0, fmt.Errorf("wake: assigning a second in minute %d, outside 0-59", minute)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.agents[agent]; ok && int(at.minute) == minute {
		return int(at.second), nil
	}
	sec := LeastLoaded(&s.load[minute], WakeSecond(agent))
	s.setLocked(agent, slot{uint8(minute), uint8(sec)})
	return sec, nil
}

// LeastLoaded returns the second of load (agents per second of a minute)
// that holds the fewest, the first such at or after from (0–59),
// cyclically: from itself when every second holds as many.
func LeastLoaded(load *[60]int32, from int) int {
	best := from
	for i := 1; i < 60; i++ {
		if s := (from + i) % 60; load[s] < load[best] {
			best = s
		}
	}
	return best
}

// Set counts agent at minute and second (each 0–59), as assigned before
// (by this relay before a restart, or by another sharing its store),
// moving it if it was counted elsewhere.
func (s *Seconds) Set(agent string, minute, second int) error {
	if minute < 0 || minute > 59 || second < 0 || second > 59 {
		return fmt.Errorf("wake: wake second %d of minute %d, outside 0-59", second, minute)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setLocked(agent, slot{uint8(minute), uint8(second)})
	return nil
}

func (s *Seconds) setLocked(agent string, at slot) {
	if s.agents == nil {
		s.agents = map[string]slot{}
	}
	if old, ok := s.agents[agent]; ok {
		s.load[old.minute][old.second]--
	}
	s.agents[agent] = at
	s.load[at.minute][at.second]++
}

// Forget stops counting agent, freeing its second; an agent not counted
// is no error.
func (s *Seconds) Forget(agent string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.agents[agent]; ok {
		s.load[old.minute][old.second]--
		delete(s.agents, agent)
	}
}

// Load returns how many agents Seconds counts at minute and second (0
// outside 0–59).
func (s *Seconds) Load(minute, second int) int {
	if minute < 0 || minute > 59 || second < 0 || second > 59 {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.load[minute][second])
}
