package jsstore_test

import (
	"sync"
	"testing"

	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/store/rollouts"
	"github.com/torpor-dev/torpor/store/rollouts/rolloutstest"
)

// TestRolloutsContract runs rolloutstest against Rollouts on a real
// nats-server per check; every store a check opens is a new connection
// (as another relay) to that check's server.
func TestRolloutsContract(t *testing.T) {
	var mu sync.Mutex
	servers := map[string]*jsserver.Server{}
	rolloutstest.Run(t, func(tb testing.TB) rollouts.Store {
		t := tb.(*testing.T)
		mu.Lock()
		srv, ok := servers[t.Name()]
		if !ok {
			srv = single(t)
			servers[t.Name()] = srv
		}
		mu.Unlock()
		s := (*jsstore.Conn).OwnRollouts(open(t, srv))
		t.Cleanup(func() { s.Close() })
		return s
	})
}
