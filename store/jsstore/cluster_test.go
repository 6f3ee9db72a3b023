package jsstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store/agents/agentstest"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/store/queue/queuetest"
)

// TestContractsOnCluster runs both contract suites with 3 replicas on a
// 3-server cluster, each check under its own stream prefix, every opening
// connected to a different server of the cluster.
func TestContractsOnCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ss, err := jsserver.StartCluster(ctx, t.TempDir(), 3, jsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown(ss) })
	checks, opens := 0, 0
	openR3 := func(t *testing.T, prefix string) *jsstore.Conn {
		opens++
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := jsstore.Open(ctx, jsstore.Config{URLs: []string{ss[opens%3].URL()}, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Each check has its own prefix: Q1, Q2, ... then A9, A10, ...
	onPrefix := func(suite string) func(t *testing.T) func(t *testing.T) *jsstore.Conn {
		return func(*testing.T) func(t *testing.T) *jsstore.Conn {
			checks++
			prefix := fmt.Sprintf("%s%d", suite, checks)
			return func(t *testing.T) *jsstore.Conn { return openR3(t, prefix) }
		}
	}
	queuetest.Run(t, opener(onPrefix("Q"), (*jsstore.Conn).OwnQueue))
	agentstest.Run(t, opener(onPrefix("A"), (*jsstore.Conn).OwnAgents))
	nc := openR3(t, "CHECK")
	defer nc.Close()
	if r := nc.NATS().ConnectedServerName(); !strings.HasPrefix(r, "n") {
		t.Errorf("connected to %q, want a cluster server", r)
	}
}
