// Package wake holds the duty-cycle schedule of a sleeping agent and the
// sources that wake its device.
//
// The schedule part (mode.go, window.go, retry.go) is pure arithmetic on
// an injected time, shared by the relay and the agent so that both derive
// the same window:
//
//   - Mode: the four reachability modes of the A2A offline store-and-forward
//     profile (always_on, session, hourly_wake, sleep).
//   - Window: the hourly wake window. Its minute is WakeMinute(agent DID):
//     FNV-1a 32 over the DID's UTF-16 code units modulo 60, exactly as the
//     reference implementation derives it, so a Torpor relay and an Atom
//     agent agree on when an agent is awake. The default length is five
//     minutes (the reference's [m, m+4] UTC minutes). A Torpor agent's
//     window opens at WakeSecond(agent DID) of its minute, so the devices
//     of a minute do not link at once; it publishes the second as part of
//     the window's offset. A relay that knows its fleet assigns a better
//     second (Seconds, assign.go: the least-loaded second of the minute)
//     and sends it over the link; the device then opens its window there
//     instead. An optional offset shifts a device further.
//   - RetryAfter: whole seconds to a moment inside the next window, spread
//     by jitter across the window so that refused senders do not all come
//     back in the same second (the profile's wake-storm consideration), never
//     0 and never past the window's end, and without the reference's
//     wrap-around bug that overshoots by an hour.
//
// The wake sources (timer, RTC, GPIO) live in subpackages.
package wake

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Mode is an agent's reachability mode. The names are the profile's
// informative Atom names.
type Mode string

// The reachability modes and the profile's abstract modes they implement.
const (
	// AlwaysOn (AlwaysAvailable) accepts live requests at any time.
	AlwaysOn Mode = "always_on"
	// Session (SessionOnly) accepts while a session is active and MUST NOT
	// queue for later delivery.
	Session Mode = "session"
	// HourlyWake (PeriodicallyAvailable) accepts inside its hourly window
	// and may queue outside it.
	HourlyWake Mode = "hourly_wake"
	// Sleep (UnavailableStoreForward) refuses live processing and may
	// queue within bounds.
	Sleep Mode = "sleep"
)

// Modes lists the valid modes.
var Modes = []Mode{AlwaysOn, Session, HourlyWake, Sleep}

// ParseMode returns the Mode named s, or an error naming the valid modes.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return "", fmt.Errorf("wake: unknown reachability mode %q (want one of %s)", s, strings.Join(names, ", "))
}

// Valid reports whether m is one of Modes.
func (m Mode) Valid() bool {
	_, err := ParseMode(string(m))
	return err == nil
}

// String returns the mode's name.
func (m Mode) String() string { return string(m) }

// Queues reports whether the mode allows store-and-forward when a request
// is not accepted live: hourly_wake and sleep do, session MUST NOT
// (profile, Reachability Modes), always_on never needs to.
func (m Mode) Queues() bool { return m == HourlyWake || m == Sleep }

// Scheduled reports whether the mode follows the hourly window.
func (m Mode) Scheduled() bool { return m == HourlyWake }

// Schedule is what the relay knows of an agent's schedule: the mode and
// window its device last published, and the next wake it announced.
type Schedule struct {
	Mode   Mode
	Window Window
	// NextWake is the next wake the device announced, its schedule's or one
	// an operator scheduled; zero for none.
	NextWake time.Time
}

// Verdict is the answer to an inbound request at one moment.
type Verdict struct {
	// Accept means the agent takes the request live now.
	Accept bool
	// Queue means the request is refused live but may be stored and
	// forwarded (within bounds), answered agent_asleep. Without Accept or
	// Queue the request is refused and not stored.
	Queue bool
	// RetryAfter is the Retry-After in seconds when the next window is
	// known; 0 means none.
	RetryAfter int
}

// Evaluate returns the verdict at now for a request to an agent with
// schedule s whose device is linked or not: the one reachability table
// (profile, Reachability Modes), which the relay answers by and the
// offline-delivery vectors check.
//
//	mode         linked, in window   otherwise
//	always_on    accept              queue, no Retry-After (device offline)
//	session      accept              refuse, never queue
//	hourly_wake  accept              queue, Retry-After into the next window
//	sleep        queue               queue, Retry-After only for an announced wake
//
// An hourly_wake Retry-After is RetryAfter(s.Window, now, rnd), except that
// a device that is not linked and announced a wake later than now (it left
// its window early, or its clock runs ahead) is sent to the window of that
// wake. A sleeping device's announced wake opens a window as long as
// s.Window, and the Retry-After is jittered across it. An invalid mode
// refuses and does not queue.
func Evaluate(s Schedule, linked bool, now time.Time, rnd io.Reader) Verdict {
	v := s.Decide(linked, now)
	switch {
	case !v.Queue:
	case s.Mode == HourlyWake:
		v.RetryAfter = s.hourlyRetry(linked, now, rnd)
	case s.Mode == Sleep:
		v.RetryAfter = s.sleepRetry(now, rnd)
	}
	return v
}

// Decide is Evaluate without the Retry-After: whether the request is taken
// live, queued or refused. It draws no randomness, so a caller can decide
// cheaply (before authenticating, say) and evaluate only the requests it
// answers asleep.
func (s Schedule) Decide(linked bool, now time.Time) Verdict {
	switch s.Mode {
	case AlwaysOn:
		return Verdict{Accept: linked, Queue: !linked}
	case Session:
		return Verdict{Accept: linked}
	case HourlyWake:
		if linked && s.Window.Contains(now) {
			return Verdict{Accept: true}
		}
		return Verdict{Queue: true}
	case Sleep:
		return Verdict{Queue: true}
	}
	return Verdict{}
}

func (s Schedule) hourlyRetry(linked bool, now time.Time, rnd io.Reader) int {
	if !linked && s.NextWake.After(now) {
		start, end := s.Window.Next(s.NextWake)
		if n, ok := Jitter(now, start, end, rnd); ok {
			return n
		}
	}
	return RetryAfter(s.Window, now, rnd)
}

// sleepRetry returns the Retry-After into [NextWake, NextWake + the
// window's length), or 0 when no wake later than now was announced.
func (s Schedule) sleepRetry(now time.Time, rnd io.Reader) int {
	if !s.NextWake.After(now) {
		return 0
	}
	n, _ := Jitter(now, s.NextWake, s.NextWake.Add(s.Window.length()), rnd)
	return n
}
