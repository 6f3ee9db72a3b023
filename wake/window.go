package wake

import (
	"crypto/sha256"
	"encoding/binary"
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

// wakeSecondLabel separates WakeSecond's hash from any other use of
// SHA-256 over a DID.
const wakeSecondLabel = "torpor wake second\x00"

// WakeSecond returns the second (0–59) of its wake minute at which a
// Torpor agent's hourly window opens: the first 8 bytes of SHA-256 over
// "torpor wake second", a zero byte and seed, big-endian, modulo 60. The
// agent uses its DID as the seed, like WakeMinute.
//
// WakeMinute alone spreads a fleet over the hour's minutes, but every
// device of a minute would link at its :00 (a wake storm for the relay,
// profile Security Considerations); WakeSecond spreads them over the
// minute's seconds. It is independent of WakeMinute (another hash), so the
// devices of one minute are spread like the whole fleet. The device still
// wakes inside the minute the reference derives, and it publishes the
// second with its window (as part of the offset, runtime/wake.go), so the
// relay's Retry-After and the next window on the card point at the second
// it really wakes.
func WakeSecond(seed string) int {
	h := sha256.Sum256([]byte(wakeSecondLabel + seed))
	return int(binary.BigEndian.Uint64(h[:8]) % 60)
}

// Window is an agent's hourly wake window: it opens every hour at Minute
// plus Second plus Offset (UTC) and stays open for Length.
type Window struct {
	// Minute is the wake minute, 0–59; usually WakeMinute(agent DID).
	Minute int
	// Second is the second of the minute at which the window opens, 0–59:
	// for a Torpor agent the one its relay assigned (Seconds), or
	// WakeSecond(agent DID) until it assigns one; 0 (the reference's :00)
	// for a window the relay derives itself or learns from the link,
	// where the device's second is part of Offset.
	Second int
	// Length is how long the window stays open; zero means DefaultLength.
	// A length of an hour or more means always inside. Lengths under a
	// second are invalid: RetryAfter could not name a whole second inside.
	Length time.Duration
	// Offset shifts the start within the hour (it may be negative or carry
	// seconds), e.g. to spread a fleet whose DIDs share a wake minute. It
	// is taken modulo an hour.
	Offset time.Duration
}

// WindowFor returns the reference's default window of the agent whose DID
// is seed: its wake minute, from :00. A relay uses it for an agent that
// has not published its window.
func WindowFor(seed string) Window { return Window{Minute: WakeMinute(seed)} }

// SpreadWindowFor returns the default window of a Torpor agent whose DID
// is seed: WindowFor's, opening at WakeSecond(seed) of the minute.
func SpreadWindowFor(seed string) Window {
	return Window{Minute: WakeMinute(seed), Second: WakeSecond(seed)}
}

// Shift returns where in the hour the window opens relative to its
// minute's :00, Second plus Offset: what the device publishes as its
// window's offset, so that a relay that knows only Minute and an offset
// (transport/link/wire.Window) computes the same start.
func (w Window) Shift() time.Duration {
	return time.Duration(w.Second)*time.Second + w.Offset
}

// Validate returns an error unless Minute and Second are in 0–59 and
// Length is zero (the default) or at least a second.
func (w Window) Validate() error {
	if w.Minute < 0 || w.Minute > 59 {
		return fmt.Errorf("wake: window minute %d outside 0-59", w.Minute)
	}
	if w.Second < 0 || w.Second > 59 {
		return fmt.Errorf("wake: window second %d outside 0-59", w.Second)
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
	return mod(time.Duration(w.Minute)*time.Minute+w.Shift(), time.Hour)
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
