package wake

import (
	"crypto/rand"
	"encoding/binary"
	"io"
	"math"
	"time"
)

// RetryAfter returns whole seconds from now to a moment inside the next
// window of w (the current one when now is inside it and at least a whole
// second of it remains), for an HTTP Retry-After header and the profile's
// retryAfterSec. The moment is drawn uniformly from the whole seconds that
// land inside that window, using rnd (nil means crypto/rand), so that
// senders refused at the same instant spread out over the window instead of
// returning together (profile, Security Considerations: wake storms). The
// result is never 0 and, for a valid window, never reaches the window's
// end.
//
// Unlike the reference, the distance to a window later in the same hour is
// not taken across the hour: wake minute 11 at 12:05:00 is 360 s (plus
// jitter), not 3960 s.
func RetryAfter(w Window, now time.Time, rnd io.Reader) int {
	start, end := w.Next(now)
	if s, ok := Jitter(now, start, end, rnd); ok {
		return s
	}
	// Less than a whole second of the current window is left: aim at the
	// following one.
	next, nextEnd := w.Next(end)
	if s, ok := Jitter(now, next, nextEnd, rnd); ok {
		return s
	}
	// Only an invalid window (shorter than a second) gets here: answer the
	// next start, rounded up.
	return int(max(1, ceilSeconds(start.Sub(now.Round(0)))))
}

// Jitter returns a whole number of seconds d >= 1, drawn uniformly using
// rnd (nil means crypto/rand), such that start <= now+d < end. It reports
// false when no such d exists. The relay uses it for a wake an operator
// scheduled for a sleeping agent. If rnd fails, d is the earliest such
// second.
func Jitter(now, start, end time.Time, rnd io.Reader) (int, bool) {
	now = now.Round(0)
	lo := ceilSeconds(start.Round(0).Sub(now))
	if lo < 1 {
		lo = 1
	}
	hi := ceilSeconds(end.Round(0).Sub(now)) - 1 // largest d with now+d < end
	if hi < lo {
		return 0, false
	}
	return int(lo + uniform(rnd, hi-lo+1)), true
}

// ceilSeconds rounds d up to whole seconds.
func ceilSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second > 0 {
		s++
	}
	return s
}

// uniform returns a uniform integer in [0, n) read from rnd, by rejection
// sampling so that no value is favoured. It returns 0 if rnd fails.
func uniform(rnd io.Reader, n int64) int64 {
	if n <= 1 {
		return 0
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	un := uint64(n)
	limit := math.MaxUint64 - math.MaxUint64%un // values >= limit are rejected
	var b [8]byte
	for range 64 {
		if _, err := io.ReadFull(rnd, b[:]); err != nil {
			return 0
		}
		if v := binary.BigEndian.Uint64(b[:]); v < limit {
			return int64(v % un)
		}
	}
	return 0
}
