package relay

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// TestTenantPutByTheHost: the relay's own operator makes a new owner a
// tenant with a queued-bytes quota over PUT /operator/tenants/{did},
// without a restart: the owner's enrolment then admits its device into
// the tenant, the quota refuses the second request (507), and raising
// it takes the next one, the first still queued. A tenant's operator is
// refused (403), and so are a body with an unknown member, a negative
// quota and a path that is not a DID (400); each attempt is in the audit
// log.
func TestTenantPutByTheHost(t *testing.T) {
	st, err := audit.OpenBolt(filepath.Join(t.TempDir(), "audit.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	th := newTenantHarness(t, tenancy.Quotas{}, func(c *Config) { c.Stores.Audit = st })
	owner, dev := didtest.Key(t, 66), didtest.Key(t, 73)
	path := "/operator/tenants/" + owner.DID().String()
	put := func(body string) resp {
		return th.asOperator(t, "PUT", path, th.host, strings.NewReader(body))
	}
	r := put(`{"quotas":{"queuedBytes":` + strconv.Itoa(len(sendV1)) + `}}`)
	var tt operatorapi.Tenant
	if err := json.Unmarshal(r.body, &tt); r.status != 200 || err != nil || tt.Owner != owner.DID().String() || tt.Quotas.QueuedBytes != int64(len(sendV1)) {
		t.Fatalf("host's put: %d %s", r.status, r.body)
	}
	if !th.enrolled(t, owner, dev) {
		t.Fatal("the new tenant's enrolment was refused")
	}
	if r := th.post(t, dev.DID(), didtest.Key(t, 90), "1.0", sendV1); r.status != http.StatusServiceUnavailable {
		t.Fatalf("first request: %d %s", r.status, r.body)
	}
	if r := th.post(t, dev.DID(), didtest.Key(t, 91), "1.0", sendV1); r.status != http.StatusInsufficientStorage || !strings.Contains(string(r.body), "queued_bytes") {
		t.Fatalf("second request past the quota: %d %s", r.status, r.body)
	}
	if r := put(`{"quotas":{"queuedBytes":` + strconv.Itoa(2*len(sendV1)) + `}}`); r.status != 200 {
		t.Fatalf("raising the quota: %d %s", r.status, r.body)
	}
	if r := th.post(t, dev.DID(), didtest.Key(t, 92), "1.0", sendV1); r.status != http.StatusServiceUnavailable {
		t.Fatalf("a request within the raised quota: %d %s", r.status, r.body)
	}
	if n := len(th.queued(t, dev.DID())); n != 2 {
		t.Errorf("the device's queue holds %d records, want 2", n)
	}
	checkTenantPutRefusals(t, th, path)
	if got, _ := th.ledger.Tenant(owner.DID()); got.Quotas != (tenancy.Quotas{QueuedBytes: int64(2 * len(sendV1))}) {
		t.Errorf("the ledger's quotas after the refused puts: %+v", got.Quotas)
	}
	outcomes := map[string]int{}
	for _, rec := range auditRecords(t, th.harness, st) {
		if rec.Action == audit.ActionTenant {
			outcomes[rec.Outcome]++
		}
	}
	if outcomes[audit.OK] != 2 || outcomes[audit.Refused] != 5 {
		t.Errorf("the audit log's tenant records: %v, want 2 ok and 5 refused", outcomes)
	}
}

// checkTenantPutRefusals: a tenant's operator gets 403 at path, a body
// with an unknown member or a negative quota and a tenant that is not a
// DID 400.
func checkTenantPutRefusals(t *testing.T, th *tenantHarness, path string) {
	t.Helper()
	for _, c := range []struct {
		body   string
		status int
		as     string
	}{
		{`{"quotas":{"devices":1}}`, 403, "opA"},
		{`{"quotas":{"devices":1},"extra":1}`, 400, "host"},
		{`{"quotas":{"devices":-1}}`, 400, "host"},
		{`{"quotas":{"seats":1}}`, 400, "host"},
	} {
		k := th.host
		if c.as == "opA" {
			k = th.opA
		}
		if r := th.asOperator(t, "PUT", path, k, strings.NewReader(c.body)); r.status != c.status {
			t.Errorf("%s puts %s: %d %s, want %d", c.as, c.body, r.status, r.body, c.status)
		}
	}
	if r := th.asOperator(t, "PUT", "/operator/tenants/not-a-did", th.host, strings.NewReader(`{"quotas":{}}`)); r.status != 400 {
		t.Errorf("a tenant that is not a DID: %d %s", r.status, r.body)
	}
}
