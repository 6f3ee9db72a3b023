package jsstore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/agents/agentstest"
	"github.com/torpor-dev/torpor/store/jsstore"
)

// TestAgentsContract runs agentstest against Agents on a fresh server per
// check; a store opened again is a new connection to the same server.
func TestAgentsContract(t *testing.T) {
	agentstest.Run(t, opener(onSingle, (*jsstore.Conn).OwnAgents))
}

// TestTakeAcrossConnections: 3 connections (as 3 relays) take from one
// pool of 30 concurrently, 15 takes each: every KeyPackage is handed out
// once, then the last-resort one; an empty bucket lists no agents.
func TestTakeAcrossConnections(t *testing.T) {
	srv := single(t)
	ctx := context.Background()
	var stores []agents.Store
	for range 3 {
		c := open(t, srv)
		t.Cleanup(func() { c.Close() })
		stores = append(stores, c.Agents())
	}
	if ids, err := stores[0].Agents(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("Agents on an empty bucket = %v, %v; want none", ids, err)
	}
	const agent, n = "did:key:zPool", 30
	pool := make([][]byte, n)
	for i := range pool {
		pool[i] = agentstest.KP(byte(i))
	}
	if err := stores[0].Put(ctx, agent, agents.State{}, pool, agentstest.KP(255)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[byte]int{}
	lastResort := 0
	var wg sync.WaitGroup
	for i := range 45 {
		wg.Go(func() {
			kp, last, err := stores[i%3].TakeKeyPackage(ctx, agent)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("TakeKeyPackage = %v", err)
			case last:
				lastResort++
			default:
				got[kp[len(kp)-1]]++
			}
		})
	}
	wg.Wait()
	for tag, c := range got {
		if c != 1 {
			t.Errorf("KeyPackage %d handed out %d times", tag, c)
		}
	}
	if len(got) != n || lastResort != 45-n {
		t.Errorf("%d distinct pooled KeyPackages and %d last-resort answers, want %d and %d", len(got), lastResort, n, 45-n)
	}
}

// TestBucketReadsFromLeader: the agents bucket has direct gets off, so a
// relay never reads a lagging replica's copy of what another relay wrote.
func TestBucketReadsFromLeader(t *testing.T) {
	srv := single(t)
	c := open(t, srv)
	defer c.Close()
	js, err := jetstream.New(c.NATS())
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(context.Background(), "KV_"+jsstore.AgentsBucket)
	if err != nil {
		t.Fatal(err)
	}
	if s.CachedInfo().Config.AllowDirect {
		t.Error("the agents bucket allows direct gets")
	}
}
