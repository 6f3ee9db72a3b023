package mqttconn

import (
	"math/rand/v2"
	"time"
)

// ExponentialBackoff waits nothing before the first attempt and, before
// attempt n, a random time between minDelay and a ceiling that starts at
// initialMax and grows by factor each attempt up to maxDelay. It is
// autopaho's NewExponentialBackoff, and panics on the arguments that
// panics on: minDelay ≤ 0, maxDelay ≤ minDelay, initialMax outside
// [minDelay, maxDelay], factor ≤ 1.
func ExponentialBackoff(minDelay, maxDelay, initialMax time.Duration, factor float32) func(int) time.Duration {
	switch {
	case minDelay <= 0:
		panic("mqttconn: backoff: min delay must be positive")
	case maxDelay <= minDelay:
		panic("mqttconn: backoff: max delay must exceed min delay")
	case initialMax < minDelay || maxDelay < initialMax:
		panic("mqttconn: backoff: initial max delay must be within [min, max]")
	case factor <= 1:
		panic("mqttconn: backoff: factor must exceed 1")
	}
	lo, hi := minDelay.Milliseconds(), maxDelay.Milliseconds()
	return func(attempt int) time.Duration {
		if attempt <= 0 {
			return 0
		}
		ceil := initialMax.Milliseconds()
		for i := 1; i < attempt; i++ {
			ceil = int64(float32(ceil) * factor)
			if ceil > hi || ceil < lo {
				ceil = hi
				break
			}
		}
		return time.Duration(lo+rand.Int64N(ceil-lo+1)) * time.Millisecond
	}
}
