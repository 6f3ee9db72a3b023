package jsstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store/jsstore"
)

// TestConcurrentFirstStarts: three relays started at once on a new
// cluster (no streams, no bucket yet), each through another server, all
// open: creating the streams and the bucket races, and every racer ends
// with the same checked streams.
func TestConcurrentFirstStarts(t *testing.T) {
	ss := cluster(t)
	for round := range 2 {
		prefix := "FIRST" + string(rune('A'+round))
		var wg sync.WaitGroup
		errs := make([]error, len(ss))
		for i, s := range ss {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				c, err := jsstore.Open(ctx, jsstore.Config{URLs: []string{s.URL()}, Prefix: prefix})
				if err == nil {
					c.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d: relay %d of 3 started at once: %v", round, i+1, err)
			}
		}
	}
}
