package tenants_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/tenants"
	"github.com/torpor-dev/torpor/store/tenants/tenantstest"
)

// TestLedgerContract runs tenantstest on a real bbolt file per check; a
// second open in a check opens the same file again (bbolt locks it
// against a second opener, so the contract closes the first before).
func TestLedgerContract(t *testing.T) {
	var mu sync.Mutex
	paths := map[string]string{}
	tenantstest.Run(t, func(tb testing.TB, clk clock.Clock) tenants.Store {
		mu.Lock()
		p, ok := paths[tb.Name()]
		if !ok {
			p = filepath.Join(tb.TempDir(), "tenants.db")
			paths[tb.Name()] = p
		}
		mu.Unlock()
		l, err := tenants.OpenLedger(p, clk)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { l.Close() })
		return l
	}, 1)
}

func ExampleQuotaError() {
	owner := did.MustParse("did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK")
	fmt.Println(&tenants.QuotaError{Tenant: owner, Quota: tenants.QuotaQueuedBytes, Limit: 1000, Used: 999, Want: 37})
	// Output: tenant did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK quota queued_bytes reached: 999 of 1000 used, 37 more asked
}
