package session

import (
	"context"
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"

	relayagents "github.com/torpor-dev/torpor/store/agents"
)

// TestMaxPoolSizeIsTheRelays: the agent makes no more KeyPackages than
// the relay keeps.
func TestMaxPoolSizeIsTheRelays(t *testing.T) {
	if MaxPoolSize != relayagents.MaxKeyPackages {
		t.Fatalf("MaxPoolSize %d, the relay keeps %d", MaxPoolSize, relayagents.MaxKeyPackages)
	}
}

// TestRefillBounds: a target or pool size above MaxPoolSize is refused
// with the bound; a cancelled context stops the making of KeyPackages.
func TestRefillBounds(t *testing.T) {
	bob := newAgent(t, "bob", nil)
	err := bob.db.Update(func(tx *bolt.Tx) error { _, err := bob.s.Refill(tx, MaxPoolSize+1); return err })
	if err == nil {
		t.Fatalf("Refill(%d) = nil, want the bound named", MaxPoolSize+1)
	}
	if _, err := New(Config{Key: bob.s.cfg.Key, PoolSize: MaxPoolSize + 1}); err == nil {
		t.Fatalf("New with PoolSize %d = nil error", MaxPoolSize+1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = bob.db.Update(func(tx *bolt.Tx) error { _, err := bob.s.RefillContext(ctx, tx, MaxPoolSize); return err })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("RefillContext with a cancelled context = %v, want context.Canceled", err)
	}
	if total, _ := poolSize(t, bob); total != 0 {
		t.Fatalf("pool holds %d after the cancelled refill, want 0 (rolled back)", total)
	}
}
