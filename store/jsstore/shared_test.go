package jsstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/shared"
	"github.com/torpor-dev/torpor/store/shared/sharedtest"
)

// sharedOpener opens each check's stores as new connections through
// connect, closed when the check ends.
func sharedOpener(fresh func(t *testing.T) func(t *testing.T) *jsstore.Conn) func(t *testing.T) sharedtest.Opener {
	return func(t *testing.T) sharedtest.Opener {
		connect := fresh(t)
		return func(t *testing.T) shared.Store {
			c := connect(t)
			t.Cleanup(func() { c.Close() })
			return c.Shared()
		}
	}
}

// TestSharedContract runs the store/shared contract on a fresh single
// server per check, each store of a check its own connection (as two
// relays are).
func TestSharedContract(t *testing.T) {
	sharedtest.Run(t, sharedOpener(onSingle))
}

// TestSharedContractOnCluster runs it with 3 replicas on a 3-server
// cluster, each store connected to another server, each check under its
// own prefix.
func TestSharedContractOnCluster(t *testing.T) {
	cc := &clusterChecks{ss: cluster(t)}
	sharedtest.Run(t, sharedOpener(cc.onPrefix("S")))
}

// TestSharedFailsClosed: with its connection gone, a spend, a take and a
// secret fail with an error (the relay refuses then), never as accepted.
func TestSharedFailsClosed(t *testing.T) {
	c := onSingle(t)(t)
	s := c.Shared()
	c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now := time.Now()
	if err := s.Spent("link", 10).Spend(ctx, [32]byte{1}, now.Add(time.Minute), now); err == nil || errors.Is(err, shared.ErrReplayed) {
		t.Errorf("Spend on a closed connection = %v, want a store error", err)
	}
	if _, ok, err := s.Limiter("kp-budget", shared.Rate{N: 5, Per: time.Hour}, 10).Take(ctx, "did:key:zA", now); ok || err == nil {
		t.Errorf("Take on a closed connection = %v, %v; want refused with an error", ok, err)
	}
	if k, err := s.Secret(ctx, "console-session"); k != nil || err == nil {
		t.Errorf("Secret on a closed connection = %x, %v; want an error", k, err)
	}
	if _, err := s.WakeSeconds().Assign(ctx, "did:key:zA", 3); err == nil {
		t.Error("Assign on a closed connection: no error")
	}
}
