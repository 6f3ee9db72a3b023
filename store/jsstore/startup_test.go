package jsstore_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/wake"
)

// startupAgents is how many agents TestEachStateInBulk stores: 3,000, or
// $TORPOR_STARTUP_AGENTS (docs/scale-out.md gives the figures for 100,000).
func startupAgents(t *testing.T) int {
	n := 3000
	if v := os.Getenv("TORPOR_STARTUP_AGENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("TORPOR_STARTUP_AGENTS=%q: %v", v, err)
		}
	}
	return n
}

// TestEachStateInBulk: reading every agent's state, as a relay does when
// it starts (its wake-second assignments), takes a request to create an
// ordered consumer and one per 1,000 agents, not one per agent, and gives
// every state as Get gives it. It logs the time and the requests (the
// messages the connection sent, nats.Conn.Stats) of both ways.
func TestEachStateInBulk(t *testing.T) {
	srv := single(t)
	c := open(t, srv)
	defer c.Close()
	a, ctx, n := c.Agents(), context.Background(), startupAgents(t)
	if err := a.EachState(ctx, func(id string, _ agents.State) error { return fmt.Errorf("state of %s in an empty bucket", id) }); err != nil {
		t.Fatalf("EachState on an empty bucket = %v", err)
	}
	put(t, a, n)
	sent0, start := sent(c), time.Now()
	got := map[string]agents.State{}
	err := agents.EachState(ctx, a, func(id string, st agents.State) error { got[id] = st; return nil })
	bulkReqs, bulkTime := sent(c)-sent0, time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("EachState gave %d agents, want %d", len(got), n)
	}
	if max := uint64(2 + n/1000 + 1); bulkReqs > max {
		t.Errorf("EachState of %d agents sent %d requests, want at most %d", n, bulkReqs, max)
	}
	sent0, start = sent(c), time.Now()
	err = agents.EachState(ctx, onlyStore{a}, func(id string, st agents.State) error {
		if want := got[id]; want.Mode != st.Mode || want.Window != st.Window || !want.UpdatedAt.Equal(st.UpdatedAt) {
			t.Errorf("%s: EachState gave %+v, Get %+v", id, want, st)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d agents: in bulk %d requests, %v; one Get each %d requests, %v",
		n, bulkReqs, bulkTime.Round(time.Millisecond), sent(c)-sent0, time.Since(start).Round(time.Millisecond))
}

// onlyStore hides a Store's EachState, so that agents.EachState reads one
// agent at a time.
type onlyStore struct{ agents.Store }

// put stores n agents' states through a, 32 at a time.
func put(t *testing.T, a *jsstore.Agents, n int) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			st := agents.State{Mode: wake.Mode("hourly_wake"), Window: wake.Window{Minute: i % 60, Length: time.Minute},
				UpdatedAt: time.Unix(1_700_000_000+int64(i), 0).UTC()}
			if err := a.Put(context.Background(), fmt.Sprintf("did:key:startup%06d", i), st, nil, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
