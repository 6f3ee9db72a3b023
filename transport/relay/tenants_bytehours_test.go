package relay

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// TestTenantsByteHoursQuota: with real bbolt files, the bytes 10
// senders race to queue for a tenant's two devices are what the ledger
// accrues byte-hours on, so that a quota of 10 bodies' byte-hours is
// reached exactly an hour later: the next request is refused 507
// tenant_quota, kind byte_hours, and nothing of it is queued, while the
// other tenant's senders are queued. An operator's purge stops the
// accrual of what it removed; the host's list shows the month's
// byte-hours; the next month queues again.
func TestTenantsByteHoursQuota(t *testing.T) {
	size := int64(len(sendV1))
	th := newTenantHarness(t, tenancy.Quotas{ByteHours: 10 * size})
	devA1, devA2, devB := didtest.Key(t, 70), didtest.Key(t, 71), didtest.Key(t, 72)
	for dev, owner := range map[*did.PrivateKey]*did.PrivateKey{devA1: th.a, devA2: th.a, devB: th.b} {
		if !th.enrolled(t, owner, dev) {
			t.Fatal("enrolment failed")
		}
	}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			dev := []*did.PrivateKey{devA1, devA2}[i%2]
			if r := th.post(t, dev.DID(), didtest.Key(t, byte(100+i)), "1.0", sendV1); r.status != 503 {
				t.Errorf("sender %d: %d %s, want 503 queued", i, r.status, r.body)
			}
		})
	}
	wg.Wait()
	if info, err := th.ledger.Tenant(th.a.DID()); err != nil || info.Held.QueuedBytes != 10*size {
		t.Fatalf("the ledger holds %d bytes for a (%v), want %d", info.Held.QueuedBytes, err, 10*size)
	}
	th.clk.Advance(time.Hour - time.Millisecond)
	if r := th.post(t, devA1.DID(), didtest.Key(t, 90), "1.0", sendV1); r.status != 503 {
		t.Fatalf("a ms before the quota: %d %s", r.status, r.body)
	}
	th.clk.Advance(time.Millisecond)
	r := th.post(t, devA2.DID(), didtest.Key(t, 91), "1.0", sendV1)
	e, _ := r.json["error"].(map[string]any)
	d, _ := e["data"].(map[string]any)
	if r.status != http.StatusInsufficientStorage || d["error"] != "tenant_quota" || d["kind"] != "byte_hours" {
		t.Fatalf("at the quota: %d %s; want 507 tenant_quota byte_hours", r.status, r.body)
	}
	if n1, n2 := len(th.queued(t, devA1.DID())), len(th.queued(t, devA2.DID())); n1 != 6 || n2 != 5 {
		t.Fatalf("%d and %d records queued for a's devices, want 6 and 5", n1, n2)
	}
	if r := th.post(t, devB.DID(), didtest.Key(t, 92), "1.0", sendV1); r.status != 503 {
		t.Fatalf("tenant b: %d %s", r.status, r.body)
	}
	// The purge of devA1's 6 records stops their accrual; devA2's 5 go on.
	if r := th.operatorReq(t, "DELETE", th.opA, devA1.DID(), "?all=1"); r.status != 200 {
		t.Fatalf("purge: %d %s", r.status, r.body)
	}
	before := th.periodMilliByteHours(t)
	th.clk.Advance(time.Hour)
	if got, want := th.periodMilliByteHours(t), before+5*size*1000; got != want {
		t.Fatalf("an hour after the purge: %d milli-byte-hours, want %d (devA2's 5 records)", got, want)
	}
	th.clk.Set(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))
	if r := th.post(t, devA1.DID(), didtest.Key(t, 93), "1.0", sendV1); r.status != 503 {
		t.Fatalf("the next month: %d %s", r.status, r.body)
	}
}

// periodMilliByteHours is tenant a's byte-hours this month in the host's
// list, checked against its quota there.
func (th *tenantHarness) periodMilliByteHours(t *testing.T) int64 {
	t.Helper()
	for _, tt := range th.tenantList(t) {
		if tt.Owner != th.a.DID().String() {
			continue
		}
		if tt.Quotas.ByteHours != int64(10*len(sendV1)) || !tt.ByteHoursPeriod.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
			t.Fatalf("tenant a in the list: %+v", tt)
		}
		return tt.MilliByteHours
	}
	t.Fatal("tenant a is not in the list")
	return 0
}
