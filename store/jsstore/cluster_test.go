package jsstore_test

import (
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/store/agents/agentstest"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/queue/queuetest"
)

// TestContractsOnCluster runs both contract suites with 3 replicas on a
// 3-server cluster, each check under its own stream prefix, every opening
// connected to a different server of the cluster.
func TestContractsOnCluster(t *testing.T) {
	cc := &clusterChecks{ss: cluster(t)}
	queuetest.Run(t, opener(cc.onPrefix("Q"), (*jsstore.Conn).OwnQueue))
	agentstest.Run(t, opener(cc.onPrefix("A"), (*jsstore.Conn).OwnAgents))
	nc := cc.open(t, "CHECK")
	defer nc.Close()
	if r := nc.NATS().ConnectedServerName(); !strings.HasPrefix(r, "n") {
		t.Errorf("connected to %q, want a cluster server", r)
	}
}
