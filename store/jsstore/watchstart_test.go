package jsstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
)

// TestWatchesStartWhileALeaderIsLost: a relay that starts while a server
// of its cluster is down (test/cluster's history checker restarted a
// relay just after a NATS server was killed) starts its watches of the
// agents' states and the links' presence once the buckets' streams have
// new leaders; before, the first refused request ended the relay's start.
func TestWatchesStartWhileALeaderIsLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ss, err := jsserver.StartCluster(ctx, t.TempDir(), 3, jsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown(ss) })
	var urls []string
	for _, s := range ss {
		urls = append(urls, s.URL())
	}
	c, err := jsstore.Open(ctx, jsstore.Config{URLs: urls})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// One server down: the agents bucket's leader (and the shared
	// bucket's, when it is the same server).
	for _, s := range ss {
		if s.JetStreamIsStreamLeader("$G", "KV_"+jsstore.AgentsBucket) {
			s.Shutdown()
			break
		}
	}
	sc, err := c.StateCache()
	if err != nil {
		t.Fatalf("StateCache while the agents bucket elects a leader: %v", err)
	}
	defer sc.Close()
	l, err := c.Links("r1")
	if err != nil {
		t.Fatalf("Links while the shared bucket elects a leader: %v", err)
	}
	l.Close()
}
