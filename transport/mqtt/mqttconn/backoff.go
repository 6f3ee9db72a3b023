package mqttconn

import (
	"math/rand/v2"
	"time"
)

// JitteredBackoff waits nothing before the first attempt and, before
// attempt n ≥ 1, a time drawn uniformly from [lo, ceil(n)], where ceil(n)
// is lo doubled n times and capped at hi: 2 lo, 4 lo, 8 lo, …, hi. The
// draw keeps a fleet of devices that lost their broker together from
// reconnecting together ("full jitter",
// https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/,
// with lo as a floor). A lo ≤ 0 is taken as one millisecond and a hi below
// lo as lo.
func JitteredBackoff(lo, hi time.Duration) func(attempt int) time.Duration {
	lo = max(lo, time.Millisecond)
	hi = max(hi, lo)
	return func(attempt int) time.Duration {
		if attempt <= 0 {
			return 0
		}
		ceil := lo
		for range min(attempt, 62) {
			if ceil >= hi/2 {
				ceil = hi
				break
			}
			ceil *= 2
		}
		return lo + rand.N(ceil-lo+1)
	}
}
