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
	audittest.Run(t, opener(onSingle, func(c *jsstore.Conn) audit.Store {
		a, err := c.OwnAudit(context.Background(), audittest.Max)
		if err != nil {
			c.Close()
			t.Fatal(err)
		}
		return a
	}))
}
