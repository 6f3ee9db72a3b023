package runtime

import (
	"crypto/rand"
	"encoding/binary"
	"io"
	"time"
)

// backoff is exponential backoff with jitter: the n-th delay is
// drawn uniformly from [d/2, d] with d = min·2ⁿ capped at max, so that a
// fleet that lost its relay at the same moment does not return in step.
// Reset after a success.
type backoff struct {
	min, max time.Duration
	rand     io.Reader
	n        int
}

func (b *backoff) next() time.Duration {
	d := b.min << min(b.n, 30)
	if d > b.max || d <= 0 {
		d = b.max
	}
	b.n++
	half := int64(d / 2)
	return time.Duration(half + b.uniform(half+1))
}

func (b *backoff) reset() { b.n = 0 }

// uniform returns an integer in [0, n), 0 if the source fails.
func (b *backoff) uniform(n int64) int64 {
	if n <= 1 {
		return 0
	}
	r := b.rand
	if r == nil {
		r = rand.Reader
	}
	var buf [8]byte
	if _, err := io.ReadFull(r, buf[:]); err != nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(buf[:]) % uint64(n))
}
