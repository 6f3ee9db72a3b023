package wake

import (
	"fmt"
	"time"
	"unicode/utf16"
)

// DefaultLength is the length of an hourly window when Window.Length is
// zero: five minutes, the reference's UTC minutes [m, m+4].
const DefaultLength = 5 * time.Minute

// FNV-1a 32-bit parameters (draft-eastlake-fnv, Section 2).
const (
	fnvOffset32 = 2166136261
	fnvPrime32  = 16777619
)

// WakeMinute returns the agent's hourly wake minute (0–59): FNV-1a 32 over
// the UTF-16 code units of seed, modulo 60. Each code unit is XORed into
// the hash whole (as JavaScript's charCodeAt does in the reference), not
// byte by byte. The relay and the agent use the agent's DID as the seed.
// WakeMinute("wake-vector-seed") is 11 (offline-delivery vectors).
func WakeMinute(seed string) int {
	h := uint32(fnvOffset32)
	for _, u := range utf16.Encode([]rune(seed)) {
		h ^= uint32(u)
		h *= fnvPrime32
	}
	return int(h % 60)
}

// Window is an agent's hourly wake window: it opens every hour at Minute
// plus Offset (UTC) and stays open for Length.
type Window struct {
	// Minute is the wake minute, 0–59; usually WakeMinute(agent DID).
	Minute int
	// Length is how long the window stays open; zero means DefaultLength.
	// A length of an hour or more means always inside. Lengths under a
	// second are invalid: RetryAfter could not name a whole second inside.
	Length time.Duration
	// Offset shifts the start within the hour (it may be negative or carry
	// seconds), e.g. to spread a fleet whose DIDs share a wake minute. It
	// is taken modulo an hour.
	Offset time.Duration
}

// WindowFor returns the default window of the agent whose DID is seed.
func WindowFor(seed string) Window { return Window{Minute: WakeMinute(seed)} }

// Validate returns an error unless Minute is in 0–59 and Length is zero
// (the default) or at least a second.
func (w Window) Validate() error {
	if w.Minute < 0 || w.Minute > 59 {
		return fmt.Errorf("wake: window minute %d outside 0-59", w.Minute)
	}
	if w.Length < 0 || w.Length > 0 && w.Length < time.Second {
		return fmt.Errorf("wake: window length %v (want 0 for the default, or at least 1s)", w.Length)
	}
	return nil
}

func (w Window) length() time.Duration {
	if w.Length <= 0 {
		return DefaultLength
	}
	return w.Length
}

// start returns the window's start as an offset into the hour, in [0, 1h).
func (w Window) start() time.Duration {
	return mod(time.Duration(w.Minute)*time.Minute+w.Offset, time.Hour)
}

// into returns how long ago the most recent window start was, in [0, 1h).
func (w Window) into(t time.Time) time.Duration {
	pos := t.Sub(t.Truncate(time.Hour)) // offset into the UTC hour
	return mod(pos-w.start(), time.Hour)
}

// Contains reports whether t is inside a window (start inclusive, end
// exclusive).
func (w Window) Contains(t time.Time) bool {
	return w.into(t.Round(0)) < w.length()
}

// Next returns the next window at or after t: the current one when t is
// inside a window, else the one that opens next. end is exclusive.
func (w Window) Next(t time.Time) (start, end time.Time) {
	t = t.Round(0)
	in := w.into(t)
	if in < w.length() {
		start = t.Add(-in)
	} else {
		start = t.Add(time.Hour - in)
	}
	return start, start.Add(w.length())
}

// mod returns a mod m in [0, m) for m > 0.
func mod(a, m time.Duration) time.Duration {
	r := a % m
	if r < 0 {
		r += m
	}
	return r
}
