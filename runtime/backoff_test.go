package runtime

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	b := &backoff{min: time.Second, max: 30 * time.Second}
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second} {
		for range 20 {
			c := *b
			if d := c.next(); d < want/2 || d > want {
				t.Fatalf("delay %d = %v, want within [%v, %v]", i, d, want/2, want)
			}
		}
		b.next()
	}
	b.reset()
	if d := b.next(); d > time.Second {
		t.Fatalf("after reset: %v, want <= 1s", d)
	}
}
