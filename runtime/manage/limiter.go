package manage

import (
	"sync"
	"time"

	"github.com/torpor-dev/torpor/clock"
)

// limiter is a token bucket on the injected clock: n tokens per period,
// refilled continuously, at most n held.
type limiter struct {
	clock  clock.Clock
	n      float64
	period time.Duration

	mu sync.Mutex
	// mu guards all following fields.
	tokens float64
	last   time.Time
}

func newLimiter(c clock.Clock, n int, period time.Duration) *limiter {
	return &limiter{clock: c, n: float64(n), period: period, tokens: float64(n), last: c.Now()}
}

// allow takes a token if one is left.
func (l *limiter) allow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	// Wall-clock difference, monotonic readings stripped: a suspend counts.
	if el := now.Round(0).Sub(l.last.Round(0)); el > 0 {
		l.tokens = min(l.n, l.tokens+l.n*float64(el)/float64(l.period))
	}
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}
