package shared_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store/shared"
	"github.com/torpor-dev/torpor/store/shared/sharedtest"
)

// TestMemoryContract runs the contract against Memory: the stores one
// test opens are the same Memory, as one relay's memories are.
func TestMemoryContract(t *testing.T) {
	sharedtest.Run(t, func(t *testing.T) sharedtest.Opener {
		m := shared.NewMemory()
		return func(t *testing.T) shared.Store { return m }
	})
}

// TestLimiterEvictsLeastRecentlyUsed: a full limiter evicts the least
// recently used bucket, never all: a flood of new keys does not give a
// limited key its tokens back.
func TestLimiterEvictsLeastRecentlyUsed(t *testing.T) {
	ctx, now := context.Background(), time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	l := shared.NewMemory().Limiter("kp", shared.Rate{N: 1, Per: time.Minute}, 100)
	if _, ok, _ := l.Take(ctx, "victim", now); !ok {
		t.Fatal("first token refused")
	}
	for i := range 10000 {
		l.Take(ctx, fmt.Sprint("flood-", i), now)
		if i%50 == 0 {
			if _, ok, _ := l.Take(ctx, "victim", now); ok { // keeps it recently used
				t.Fatalf("after %d new keys the limited key got a token back", i+1)
			}
		}
		if n := shared.Len(l); n > 100 {
			t.Fatalf("%d buckets, cap 100", n)
		}
	}
	if n := shared.Len(l); n != 100 {
		t.Errorf("%d buckets after the flood, want the cap, 100 (none dropped wholesale)", n)
	}
}
