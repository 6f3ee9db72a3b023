package jsstore_test

import (
	"testing"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/tenants"
	"github.com/torpor-dev/torpor/store/tenants/tenantstest"
)

// TestTenantsContract runs tenantstest against Tenants on a real
// nats-server per check; every Store a check opens is a new connection
// (another relay) to that check's server, and the races spread over
// three of them.
func TestTenantsContract(t *testing.T) { tenantsContract(t, onSingle) }

// TestTenantsUnderRelayPermissions runs tenantstest as the NATS user
// with exactly the relay's permissions (docs/scale-out.md, "NATS account
// and permissions"): the ledger needs no subject beyond them.
func TestTenantsUnderRelayPermissions(t *testing.T) { tenantsContract(t, onAccounts) }

// tenantsContract runs tenantstest with a server from fresh per check.
func tenantsContract(t *testing.T, fresh func(t *testing.T) func(t *testing.T) *jsstore.Conn) {
	connect := perCheck(fresh)
	tenantstest.Run(t, func(t testing.TB, clk clock.Clock) tenants.Store {
		s := connect(t).OwnTenants(clk)
		t.Cleanup(func() { s.Close() })
		return s
	}, 3)
}
