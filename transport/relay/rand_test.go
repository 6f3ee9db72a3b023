package relay

import (
	"bytes"
	"testing"
)

// TestBufferedRand: reads shorter and longer than the buffer are filled,
// and no two are alike.
func TestBufferedRand(t *testing.T) {
	r := newBufferedRand()
	var seen [][]byte
	for _, n := range []int{8, 8, 4095, 8, 10000, 8} {
		p := make([]byte, n)
		if k, err := r.Read(p); k != n || err != nil {
			t.Fatalf("Read(%d bytes) = %d, %v", n, k, err)
		}
		for _, q := range seen {
			if bytes.Equal(p[:8], q[:8]) {
				t.Fatalf("two reads began alike: %x", q[:8])
			}
		}
		seen = append(seen, p)
	}
}
