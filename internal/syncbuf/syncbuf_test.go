package syncbuf_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/torpor-dev/torpor/internal/syncbuf"
)

// TestConcurrentWrites: lines written by many goroutines while another
// reads all arrive whole, and Bytes is a copy the buffer does not change.
func TestConcurrentWrites(t *testing.T) {
	var b syncbuf.Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				fmt.Fprintf(&b, "writer %d line %d\n", i, j)
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			_ = b.String()
		}
	})
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Errorf("%d lines, want 800", n)
	}
	got := b.Bytes()
	got[0] = 'X'
	if strings.HasPrefix(b.String(), "X") {
		t.Error("changing what Bytes returned changed the buffer")
	}
}
