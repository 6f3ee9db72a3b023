package jsstore_test

import (
	"context"
	"testing"

	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/store/audit/audittest"
	"github.com/torpor-dev/torpor/store/jsstore"
)

// TestAuditContract runs audittest against Audit on a fresh server per
// check; a store opened again is a new connection to the same stream.
func TestAuditContract(t *testing.T) {
	audittest.Run(t, opener(onSingle, ownAudit(t)))
}

// TestAuditUnderRelayPermissions: the documented permissions
// (jsserver.RelayPermissions) are enough for the audit log.
func TestAuditUnderRelayPermissions(t *testing.T) {
	audittest.Run(t, opener(onAccounts, ownAudit(t)))
}

// ownAudit opens the audit log bounded to audittest.Max on a connection
// it owns.
func ownAudit(t *testing.T) func(c *jsstore.Conn) audit.Store {
	return func(c *jsstore.Conn) audit.Store {
		a, err := c.OwnAudit(context.Background(), audittest.Max)
		if err != nil {
			c.Close()
			t.Fatal(err)
		}
		return a
	}
}
