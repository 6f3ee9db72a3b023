package jsstore_test

import (
	"sync"
	"testing"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/store/tenants"
	"github.com/torpor-dev/torpor/store/tenants/tenantstest"
)

// TestTenantsContract runs tenantstest against Tenants on a real
// nats-server per check; every Store a check opens is a new connection
// (another relay) to that check's server, and the races spread over
// three of them.
func TestTenantsContract(t *testing.T) {
	var mu sync.Mutex
	servers := map[string]*jsserver.Server{}
	tenantstest.Run(t, func(tb testing.TB, clk clock.Clock) tenants.Store {
		t := tb.(*testing.T)
		mu.Lock()
		srv, ok := servers[t.Name()]
		if !ok {
			srv = single(t)
			servers[t.Name()] = srv
		}
		mu.Unlock()
		s := open(t, srv).OwnTenants(clk)
		t.Cleanup(func() { s.Close() })
		return s
	}, 3)
}

// TestTenantsUnderRelayPermissions runs tenantstest as the NATS user
// with exactly the relay's permissions (docs/scale-out.md, "NATS account
// and permissions"): the ledger needs no subject beyond them.
func TestTenantsUnderRelayPermissions(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]func(*testing.T) *jsstore.Conn{}
	tenantstest.Run(t, func(tb testing.TB, clk clock.Clock) tenants.Store {
		t := tb.(*testing.T)
		mu.Lock()
		connect, ok := conns[t.Name()]
		if !ok {
			connect = onAccounts(t)
			conns[t.Name()] = connect
		}
		mu.Unlock()
		s := connect(t).OwnTenants(clk)
		t.Cleanup(func() { s.Close() })
		return s
	}, 3)
}
