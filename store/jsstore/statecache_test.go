package jsstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/wake"
)

// TestStateCache: relay A reads an agent's state from its StateCache while
// relay B writes it. A's reads after the first send nothing to NATS; B's
// writes reach A through the watch, A's own writes at once; an agent B
// forgot is known to A until StateCacheTTL has passed.
func TestStateCache(t *testing.T) {
	srv := single(t)
	ctx := context.Background()
	clk := clocktest.New(time.Now())
	a, err := jsstore.Open(ctx, jsstore.Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b := open(t, srv)
	t.Cleanup(func() { b.Close() })
	sc, err := a.StateCache()
	if err != nil {
		t.Fatal(err)
	}
	const agent = "did:key:zCached"
	if _, err := sc.Get(ctx, agent); !errors.Is(err, agents.ErrUnknownAgent) {
		t.Fatalf("Get of an agent nobody wrote = %v, want ErrUnknownAgent", err)
	}
	put := func(c *jsstore.Conn, m wake.Mode) {
		t.Helper()
		if err := c.Agents().Put(ctx, agent, agents.State{Mode: m}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	put(b, wake.Sleep)
	waitMode(t, sc, agent, wake.Sleep, "B's first write")
	sent := func() uint64 { a.NATS().Flush(); return a.NATS().Stats().OutMsgs }
	before := sent()
	for range 100 {
		if st, err := sc.Get(ctx, agent); err != nil || st.Mode != wake.Sleep {
			t.Fatalf("Get = %v, %v; want mode sleep", st.Mode, err)
		}
	}
	if n := sent() - before; n != 0 {
		t.Errorf("100 cached reads sent %d messages, want 0", n)
	}
	put(b, wake.AlwaysOn)
	waitMode(t, sc, agent, wake.AlwaysOn, "B's update")
	put(a, wake.HourlyWake)
	if st, err := sc.Get(ctx, agent); err != nil || st.Mode != wake.HourlyWake {
		t.Fatalf("Get right after A's own write = %v, %v; want hourly_wake", st.Mode, err)
	}
	if err := b.Agents().Forget(ctx, agent); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Get(ctx, agent); err != nil {
		t.Fatalf("Get within StateCacheTTL of B's forget = %v, want the cached state", err)
	}
	clk.Advance(jsstore.StateCacheTTL)
	if _, err := sc.Get(ctx, agent); !errors.Is(err, agents.ErrUnknownAgent) {
		t.Fatalf("Get StateCacheTTL after B's forget = %v, want ErrUnknownAgent", err)
	}
}

// waitMode waits until sc answers mode for agent: the watch delivers
// another connection's write soon after it is stored.
func waitMode(t *testing.T, sc *jsstore.StateCache, agent string, mode wake.Mode, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := sc.Get(context.Background(), agent)
		if err == nil && st.Mode == mode {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after %s the cache answers %v, %v; want mode %s", what, st.Mode, err, mode)
		}
		time.Sleep(time.Millisecond)
	}
}
