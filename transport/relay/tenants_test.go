package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/store/tenants"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// tenantHarness is a hosted relay with two tenants in a real bbolt
// ledger: a (quotas qa) and b (none); host is the relay's own operator,
// opA and opB the operators a's and b's owners named.
type tenantHarness struct {
	*harness
	ledger               *tenants.Ledger
	a, b, host, opA, opB *did.PrivateKey
}

func newTenantHarness(t testing.TB, qa tenancy.Quotas, mods ...func(*Config)) *tenantHarness {
	th := &tenantHarness{a: didtest.Key(t, 60), b: didtest.Key(t, 61), host: didtest.Key(t, 62), opA: didtest.Key(t, 63), opB: didtest.Key(t, 64)}
	var err error
	th.harness = newHarness(t, func(c *Config) {
		if th.ledger, err = tenants.OpenLedger(filepath.Join(t.TempDir(), "tenants.db"), c.Clock); err != nil {
			t.Fatal(err)
		}
		c.Stores.Tenants = th.ledger
		c.Access.UsageKey = didtest.Key(t, 65)
		c.Access.Operators = []did.DID{th.host.DID()}
		for _, m := range mods {
			m(c)
		}
	})
	t.Cleanup(func() { th.ledger.Close() })
	for owner, op := range map[*did.PrivateKey]*did.PrivateKey{th.a: th.opA, th.b: th.opB} {
		q := tenancy.Quotas{}
		if owner == th.a {
			q = qa
		}
		if err := th.ledger.Put(owner.DID(), q); err != nil {
			t.Fatal(err)
		}
		list, err := tenancy.SignOperatorList(owner, tenancy.OperatorList{Operators: []string{op.DID().String()}}, t0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := th.ledger.SetOperators(list); err != nil {
			t.Fatal(err)
		}
	}
	return th
}

// enrolled publishes dev's state with owner's enrolment and reports
// whether the relay admitted it.
func (th *tenantHarness) enrolled(t testing.TB, owner, dev *did.PrivateKey) bool {
	t.Helper()
	c := th.device(t, dev, "sleep", deviceOpts{})
	st := th.state(t, dev, c.Hello(), "sleep", deviceOpts{})
	st.Enrolment = enrolment(t, owner, dev.DID(), th.clk.Now(), time.Hour, wire.PurposeEnrolment)
	if _, err := c.Publish(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	c.Close()
	<-th.relay.Link().Gone(dev.DID().String())
	ok, err := th.states.Admitted(context.Background(), dev.DID().String())
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestTenantsEnrolWithinTheDevicesQuota: an owner's enrolment admits a
// device into its tenant up to the tenant's devices quota; past it the
// device stays on probation, and the other tenant is not affected.
func TestTenantsEnrolWithinTheDevicesQuota(t *testing.T) {
	th := newTenantHarness(t, tenancy.Quotas{Devices: 1})
	devA1, devA2, devB := didtest.Key(t, 70), didtest.Key(t, 71), didtest.Key(t, 72)
	if !th.enrolled(t, th.a, devA1) {
		t.Fatal("a's first device was not admitted by its owner's enrolment")
	}
	if th.enrolled(t, th.a, devA2) {
		t.Error("a's second device was admitted past the tenant's devices quota of 1")
	}
	if !th.enrolled(t, th.b, devB) {
		t.Error("b's device was not admitted")
	}
	for dev, want := range map[did.DID]did.DID{devA1.DID(): th.a.DID(), devB.DID(): th.b.DID()} {
		if owner, ok, err := th.ledger.TenantOf(dev); !ok || err != nil || owner != want {
			t.Errorf("device %s in tenant %v (%v, %v), want %s", dev, owner, ok, err, want)
		}
	}
	if _, ok, _ := th.ledger.TenantOf(devA2.DID()); ok {
		t.Error("the refused device is in a tenant")
	}
}

// TestTenantsRateQuotaExactUnderConcurrentSenders: 40 senders race for a
// tenant's 5 requests per second: exactly 5 are queued, 35 get 429
// naming the tenant quota; the other tenant's senders are all queued.
func TestTenantsRateQuotaExactUnderConcurrentSenders(t *testing.T) {
	th := newTenantHarness(t, tenancy.Quotas{RequestsPerSecond: 5})
	devA, devB := didtest.Key(t, 70), didtest.Key(t, 72)
	if !th.enrolled(t, th.a, devA) || !th.enrolled(t, th.b, devB) {
		t.Fatal("enrolment failed")
	}
	count := func(dev did.DID, n int) map[int]int {
		var mu sync.Mutex
		var wg sync.WaitGroup
		got := map[int]int{}
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := th.post(t, dev, didtest.Key(t, byte(100+i)), "1.0", sendV1)
				mu.Lock()
				got[r.status]++
				mu.Unlock()
				if r.status == http.StatusTooManyRequests {
					e, _ := r.json["error"].(map[string]any)
					d, _ := e["data"].(map[string]any)
					if d["error"] != "tenant_quota" || d["kind"] != "requests_per_second" || r.header.Get("Retry-After") != "1" {
						t.Errorf("429 body %s", r.body)
					}
				}
			}()
		}
		wg.Wait()
		return got
	}
	if got := count(devA.DID(), 40); got[503] != 5 || got[429] != 35 {
		t.Errorf("tenant a: %v, want 5 queued (503) and 35 refused (429)", got)
	}
	if n := len(th.queued(t, devA.DID())); n != 5 {
		t.Errorf("%d records queued for a's device, want 5", n)
	}
	// b's device takes 20 messages (its queue bound): 15 senders fit.
	if got := count(devB.DID(), 15); got[503] != 15 {
		t.Errorf("tenant b: %v, want all 15 queued", got)
	}
}

// TestTenantsOperatorsActOnlyOnTheirTenant: a tenant's operator lists,
// purges and admits only its tenant's devices; the relay's own operator
// (the host) can do none of it to a tenant's device, and nothing is
// removed by a refused request.
func TestTenantsOperatorsActOnlyOnTheirTenant(t *testing.T) {
	th := newTenantHarness(t, tenancy.Quotas{})
	devA, devB := didtest.Key(t, 70), didtest.Key(t, 72)
	if !th.enrolled(t, th.a, devA) || !th.enrolled(t, th.b, devB) {
		t.Fatal("enrolment failed")
	}
	for _, dev := range []did.DID{devA.DID(), devB.DID()} {
		if r := th.post(t, dev, didtest.Key(t, 90), "1.0", sendV1); r.status != 503 {
			t.Fatalf("enqueue: %d %s", r.status, r.body)
		}
	}
	for _, c := range []struct {
		name   string
		method string
		k      *did.PrivateKey
		dev    did.DID
		status int
	}{
		{"host lists a's", "GET", th.host, devA.DID(), 403},
		{"host purges a's", "DELETE", th.host, devA.DID(), 403},
		{"opB lists a's", "GET", th.opB, devA.DID(), 403},
		{"opB purges a's", "DELETE", th.opB, devA.DID(), 403},
		{"opA purges b's", "DELETE", th.opA, devB.DID(), 403},
		{"opA lists a's", "GET", th.opA, devA.DID(), 200},
	} {
		if r := th.operatorReq(t, c.method, c.k, c.dev, "?all=1"); r.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, r.status, r.body, c.status)
		}
	}
	if len(th.queued(t, devA.DID())) != 1 || len(th.queued(t, devB.DID())) != 1 {
		t.Fatal("a refused purge removed records")
	}
	if r := th.operatorReq(t, "DELETE", th.opA, devA.DID(), "?all=1"); r.status != 200 || r.json["purged"] != float64(1) {
		t.Errorf("opA purges a's: %d %s", r.status, r.body)
	}
	if r := th.admitAs(t, devA.DID(), th.host); r.status != 403 || r.json["error"] != "not_tenant_operator" {
		t.Errorf("host admits a's device: %d %s", r.status, r.body)
	}
	if r := th.admitAs(t, devA.DID(), th.opB); r.status != 403 {
		t.Errorf("opB admits a's device: %d %s", r.status, r.body)
	}
	if r := th.admitAs(t, devA.DID(), th.opA); r.status != 200 {
		t.Errorf("opA admits a's device: %d %s", r.status, r.body)
	}
	loose := didtest.Key(t, 80).DID()
	if r := th.admitAs(t, loose, th.opA); r.status != 403 || r.json["error"] != "not_operator" {
		t.Errorf("opA admits a device in no tenant: %d %s", r.status, r.body)
	}
}

// TestTenantsOperatorListAndUsage: an owner replaces its operators by
// uploading a newer signed list (an older one is refused); the tenant's
// operators and the host read its signed usage, another tenant's operator
// does not; the record verifies with the relay's DID and fails once
// changed.
func TestTenantsOperatorListAndUsage(t *testing.T) {
	th := newTenantHarness(t, tenancy.Quotas{RequestsPerSecond: 2})
	opA2 := didtest.Key(t, 66)
	put := func(list []byte) resp {
		req, _ := http.NewRequest("PUT", th.srv.URL+"/tenants/operators", bytes.NewReader(list))
		return th.do(t, req)
	}
	newer, _ := tenancy.SignOperatorList(th.a, tenancy.OperatorList{Operators: []string{opA2.DID().String()}}, t0.Add(time.Minute), 0)
	if r := put(newer); r.status != 200 || r.json["tenant"] != th.a.DID().String() {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	older, _ := tenancy.SignOperatorList(th.a, tenancy.OperatorList{Operators: []string{th.opA.DID().String()}}, t0, 0)
	if r := put(older); r.status != 400 || r.json["error"] != "bad_operator_list" {
		t.Fatalf("an older list: %d %s", r.status, r.body)
	}
	devA := didtest.Key(t, 70)
	if !th.enrolled(t, th.a, devA) {
		t.Fatal("enrolment failed")
	}
	for range 3 {
		th.post(t, devA.DID(), didtest.Key(t, 90), "1.0", sendV1)
	}
	if r := th.operatorReq(t, "GET", th.opA, devA.DID(), ""); r.status != 403 {
		t.Errorf("the removed operator lists a's queue: %d %s", r.status, r.body)
	}
	usage := func(k *did.PrivateKey) (int, []byte) {
		r := th.asOperator(t, "GET", "/operator/tenants/"+th.a.DID().String()+"/usage?hour=2026-01-15T12:00:00Z", k, nil)
		return r.status, r.body
	}
	if st, b := usage(th.opB); st != 403 {
		t.Errorf("b's operator reads a's usage: %d %s", st, b)
	}
	for _, k := range []*did.PrivateKey{opA2, th.host} {
		st, b := usage(k)
		if st != 200 {
			t.Fatalf("usage: %d %s", st, b)
		}
		rec, err := tenancy.VerifyRecord(b, didtest.Key(t, 65).DID())
		if err != nil || rec.Requests != 2 || rec.Refused[tenancy.QuotaRequests] != 1 || rec.PeakDevices != 1 {
			t.Errorf("record %s: %+v, %v; want 2 requests, 1 refused, 1 device", b, rec, err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		m["peakDevices"] = 0
		changed, _ := json.Marshal(m)
		if _, err := tenancy.VerifyRecord(changed, didtest.Key(t, 65).DID()); err == nil {
			t.Error("a changed record verified")
		}
	}
}

// TestTenantsQueuedBytesExactUnderConcurrentSenders: 40 senders race for
// a tenant's queued bytes, room for 5 requests over its two devices:
// exactly 5 are queued, 35 get 507 naming the quota; the other tenant's
// device takes all its senders; once a device drains, the room is back.
func TestTenantsQueuedBytesExactUnderConcurrentSenders(t *testing.T) {
	th := newTenantHarness(t, tenancy.Quotas{QueuedBytes: int64(5*len(sendV1) + 10)})
	devA1, devA2, devB := didtest.Key(t, 70), didtest.Key(t, 71), didtest.Key(t, 72)
	for dev, owner := range map[*did.PrivateKey]*did.PrivateKey{devA1: th.a, devA2: th.a, devB: th.b} {
		if !th.enrolled(t, owner, dev) {
			t.Fatal("enrolment failed")
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	got := map[int]int{}
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dev := []*did.PrivateKey{devA1, devA2}[i%2]
			r := th.post(t, dev.DID(), didtest.Key(t, byte(100+i)), "1.0", sendV1)
			mu.Lock()
			got[r.status]++
			mu.Unlock()
			if r.status == http.StatusInsufficientStorage {
				e, _ := r.json["error"].(map[string]any)
				d, _ := e["data"].(map[string]any)
				if d["error"] != "tenant_quota" || d["kind"] != "queued_bytes" {
					t.Errorf("507 body %s", r.body)
				}
			}
		}()
	}
	wg.Wait()
	if got[503] != 5 || got[507] != 35 {
		t.Fatalf("tenant a: %v, want 5 queued and 35 refused (507)", got)
	}
	if n := len(th.queued(t, devA1.DID())) + len(th.queued(t, devA2.DID())); n != 5 {
		t.Fatalf("%d records queued for a's devices, want 5", n)
	}
	for i := range 15 {
		if r := th.post(t, devB.DID(), didtest.Key(t, byte(150+i)), "1.0", sendV1); r.status != 503 {
			t.Fatalf("tenant b: %d %s", r.status, r.body)
		}
	}
	if r := th.operatorReq(t, "DELETE", th.opA, devA1.DID(), "?all=1"); r.status != 200 {
		t.Fatalf("purge: %d %s", r.status, r.body)
	}
	if r := th.post(t, devA1.DID(), didtest.Key(t, 99), "1.0", sendV1); r.status != 503 {
		t.Errorf("after a purge freed room: %d %s", r.status, r.body)
	}
}

// TestTenantMetricsBounded: with --tenant-metrics-limit 1 the first
// tenant seen has its label and the second counts under "other"; a
// refusal is counted by its quota.
func TestTenantMetricsBounded(t *testing.T) {
	th := newTenantHarness(t, tenancy.Quotas{RequestsPerSecond: 1}, func(c *Config) { c.Ops.TenantMetricsLimit = 1 })
	devA, devB := didtest.Key(t, 70), didtest.Key(t, 72)
	if !th.enrolled(t, th.a, devA) || !th.enrolled(t, th.b, devB) {
		t.Fatal("enrolment failed")
	}
	for _, dev := range []did.DID{devA.DID(), devA.DID(), devB.DID()} {
		th.post(t, dev, didtest.Key(t, 90), "1.0", sendV1)
	}
	a := th.a.DID().String()
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"torpor_relay_tenant_requests_total", map[string]string{"tenant": a}, 2},
		{"torpor_relay_tenant_requests_total", map[string]string{"tenant": "other"}, 1},
		{"torpor_relay_tenant_refusals_total", map[string]string{"tenant": a, "quota": "requests_per_second"}, 1},
	} {
		if got := labelledCounter(t, th.relay, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := labelledCounter(t, th.relay, "torpor_relay_tenant_requests_total", map[string]string{"tenant": th.b.DID().String()}); got != 0 {
		t.Errorf("the second tenant has a label of its own past the limit: %v", got)
	}
}

// labelledCounter is the value of name's counter with exactly labels
// (nil for a counter without labels) in r's registry.
func labelledCounter(t *testing.T, r *Relay, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := r.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue metric
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// TestTenantsFleetAPIScoped: /fleet/api/devices shows a tenant's operator
// only its tenant's devices, and the host only the devices in no tenant
// until an owner's list lets it see the tenant's; a tenant's operator is
// refused the audit log.
func TestTenantsFleetAPIScoped(t *testing.T) {
	th := newTenantHarness(t, tenancy.Quotas{}, func(c *Config) {
		c.Ops.Console = &ConsoleConfig{Operators: []string{didtest.Key(t, 62).DID().String()}, Secret: make([]byte, 32)}
		al, err := audit.OpenBolt(filepath.Join(t.TempDir(), "audit.db"), 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { al.Close() })
		c.Stores.Audit = al
	})
	devA, devB, loose := didtest.Key(t, 70), didtest.Key(t, 72), didtest.Key(t, 73)
	if !th.enrolled(t, th.a, devA) || !th.enrolled(t, th.b, devB) {
		t.Fatal("enrolment failed")
	}
	th.publishOffline(t, loose, "sleep", deviceOpts{})
	fleet := func(k *did.PrivateKey, path string) (int, []string) { return th.fleetDIDs(t, k, path) }
	for _, c := range []struct {
		name string
		k    *did.PrivateKey
		want []string
	}{
		{"a's operator", th.opA, []string{devA.DID().String()}},
		{"b's operator", th.opB, []string{devB.DID().String()}},
		{"the host", th.host, []string{loose.DID().String()}},
	} {
		if st, ids := fleet(c.k, "/fleet/api/devices"); st != 200 || len(ids) != 1 || ids[0] != c.want[0] {
			t.Errorf("%s sees %d %v, want %v", c.name, st, ids, c.want)
		}
	}
	if st, _ := fleet(th.opA, "/fleet/api/devices/"+devB.DID().String()); st == 200 {
		t.Error("a's operator read b's device")
	}
	list, _ := tenancy.SignOperatorList(th.b, tenancy.OperatorList{Operators: []string{th.opB.DID().String()}, HostSeesDevices: true}, t0.Add(time.Minute), 0)
	if _, err := th.ledger.SetOperators(list); err != nil {
		t.Fatal(err)
	}
	if _, ids := fleet(th.host, "/fleet/api/devices"); len(ids) != 2 {
		t.Errorf("the host sees %v once b's owner allowed it, want the loose device and b's", ids)
	}
	if st, _ := fleet(th.opA, "/fleet/api/audit"); st != http.StatusForbidden {
		t.Errorf("a's operator read the audit log: %d, want 403", st)
	}
	if st, _ := fleet(th.host, "/fleet/api/audit"); st != http.StatusOK {
		t.Errorf("the host reads the audit log: %d, want 200", st)
	}
}

// fleetDIDs gets path of the fleet API as k and returns the status and
// the DIDs of the devices in the answer.
func (th *tenantHarness) fleetDIDs(t *testing.T, k *did.PrivateKey, path string) (int, []string) {
	t.Helper()
	r := th.fleetGet(t, k, path)
	var f struct {
		Devices []struct {
			DID string `json:"did"`
		} `json:"devices"`
	}
	json.Unmarshal(r.body, &f)
	var ids []string
	for _, d := range f.Devices {
		ids = append(ids, d.DID)
	}
	return r.status, ids
}

// TestTenantsAdmittedDevicesJoinTheirOwnersTenant: devices admitted before
// their owner was a tenant join its tenant when they next publish their
// enrolment, within its devices quota; one past it stays admitted, in no
// tenant.
func TestTenantsAdmittedDevicesJoinTheirOwnersTenant(t *testing.T) {
	th := newTenantHarness(t, tenancy.Quotas{Devices: 1})
	old1, old2 := didtest.Key(t, 74), didtest.Key(t, 75)
	for _, dev := range []*did.PrivateKey{old1, old2} {
		th.admit(t, dev) // admitted as a single-owner relay did
		if !th.enrolled(t, th.a, dev) {
			t.Fatal("an admitted device is no longer admitted")
		}
	}
	in1, _, _ := th.ledger.TenantOf(old1.DID())
	_, ok2, _ := th.ledger.TenantOf(old2.DID())
	if in1 != th.a.DID() || ok2 {
		t.Errorf("after their next states: first in tenant %v, second in a tenant %v; want a's and none (quota 1)", in1, ok2)
	}
	if ok, _ := th.states.Admitted(context.Background(), old2.DID().String()); !ok {
		t.Error("the device past the quota lost its admission")
	}
}

// TestTenantsListForTheHost: the host lists the tenants with their totals
// and no device; a tenant's operator may not.
func TestTenantsListForTheHost(t *testing.T) {
	th := newTenantHarness(t, tenancy.Quotas{Devices: 5})
	devA := didtest.Key(t, 70)
	if !th.enrolled(t, th.a, devA) {
		t.Fatal("enrolment failed")
	}
	th.post(t, devA.DID(), didtest.Key(t, 90), "1.0", sendV1)
	get := func(k *did.PrivateKey) resp { return th.asOperator(t, "GET", "/operator/tenants", k, nil) }
	r := get(th.host)
	var body operatorapi.TenantList
	if err := json.Unmarshal(r.body, &body); r.status != 200 || err != nil || len(body.Tenants) != 2 {
		t.Fatalf("host: %d %s", r.status, r.body)
	}
	for _, tt := range body.Tenants {
		month := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		want := operatorapi.Tenant{Owner: th.b.DID().String(), ByteHoursPeriod: month, Operators: 1}
		if tt.Owner == th.a.DID().String() {
			want = operatorapi.Tenant{Owner: tt.Owner, Quotas: tenancy.Quotas{Devices: 5}, Devices: 1, States: operatorapi.Summary{Devices: 1, Offline: 1},
				QueuedBytes: int64(len(sendV1)), ByteHoursPeriod: month, Operators: 1}
		}
		if tt != want {
			t.Errorf("tenant %+v, want %+v", tt, want)
		}
	}
	if bytes.Contains(r.body, []byte(devA.DID().String())) {
		t.Error("the list names a tenant's device")
	}
	if r := get(th.opA); r.status != 403 {
		t.Errorf("a's operator lists the tenants: %d %s", r.status, r.body)
	}
}

// TestTenantsKeyPackageQuota: a tenant's devices together hold at most
// its KeyPackage bytes; a state past it is refused and nothing of it is
// stored; a replaced pool frees room; the other tenant is not bounded.
func TestTenantsKeyPackageQuota(t *testing.T) {
	th := newTenantHarness(t, tenancy.Quotas{KeyPackageBytes: int64(3 * len(kp(0)))})
	devA1, devA2, devB := didtest.Key(t, 70), didtest.Key(t, 71), didtest.Key(t, 72)
	for dev, owner := range map[*did.PrivateKey]*did.PrivateKey{devA1: th.a, devA2: th.a, devB: th.b} {
		if !th.enrolled(t, owner, dev) {
			t.Fatal("enrolment failed")
		}
	}
	publish := func(dev *did.PrivateKey, o deviceOpts, replace bool) error {
		c := th.dial(t, dev)
		defer c.Close()
		st := th.state(t, dev, c.Hello(), "sleep", o)
		st.ReplaceKeyPackages = replace
		_, err := c.Publish(context.Background(), st)
		return err
	}
	if err := publish(devA1, deviceOpts{kps: [][]byte{kp(1), kp(2)}}, false); err != nil {
		t.Fatalf("2 of 3: %v", err)
	}
	err := publish(devA2, deviceOpts{kps: [][]byte{kp(3), kp(4)}}, false)
	if err == nil || !strings.Contains(err.Error(), "tenant_quota") || !strings.Contains(err.Error(), "keypackage_bytes") {
		t.Fatalf("4 of 3: %v, want a tenant_quota refusal", err)
	}
	if pool, _, _ := th.states.KeyPackages(context.Background(), devA2.DID().String()); len(pool) != 0 {
		t.Fatalf("the refused state stored %d KeyPackages", len(pool))
	}
	if err := publish(devA1, deviceOpts{kps: [][]byte{kp(5)}}, true); err != nil {
		t.Fatalf("replacing 2 by 1: %v", err)
	}
	if err := publish(devA2, deviceOpts{kps: [][]byte{kp(6), kp(7)}}, false); err != nil {
		t.Fatalf("3 of 3 after the replacement: %v", err)
	}
	if err := publish(devB, deviceOpts{kps: [][]byte{kp(1), kp(2), kp(3), kp(4)}}, false); err != nil {
		t.Fatalf("tenant b: %v", err)
	}
}

// TestTenantsSampledByteHours: the queued bytes SampleTenants sees are
// held over the relay's clock into the tenant's usage record.
func TestTenantsSampledByteHours(t *testing.T) {
	th := newTenantHarness(t, tenancy.Quotas{})
	devA := didtest.Key(t, 70)
	if !th.enrolled(t, th.a, devA) {
		t.Fatal("enrolment failed")
	}
	th.post(t, devA.DID(), didtest.Key(t, 90), "1.0", sendV1)
	ctx := context.Background()
	if err := th.relay.SampleTenants(ctx); err != nil {
		t.Fatal(err)
	}
	th.clk.Advance(30 * time.Minute)
	if err := th.relay.SampleTenants(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := th.ledger.Usage(th.a.DID(), t0, didtest.Key(t, 65))
	if want := int64(len(sendV1)) * 1000 / 2; err != nil || r.MilliByteHours != want || r.PeakQueuedBytes != int64(len(sendV1)) {
		t.Errorf("usage %+v (%v), want %d milli-byte-hours and a peak of %d", r, err, want, len(sendV1))
	}
}

// TestTenantsForgottenDeviceFreesItsRoom: a device the relay forgets for
// its silence leaves its tenant, so that another device may join.
func TestTenantsForgottenDeviceFreesItsRoom(t *testing.T) {
	th := newTenantHarness(t, tenancy.Quotas{Devices: 1}, func(c *Config) { c.Limits.ForgetAfter = time.Hour })
	old, next := didtest.Key(t, 70), didtest.Key(t, 71)
	if !th.enrolled(t, th.a, old) || th.enrolled(t, th.a, next) {
		t.Fatal("want the first device admitted and the second refused by the quota")
	}
	th.clk.Advance(2 * time.Hour)
	if n := th.relay.forgetSilent(context.Background()); n < 1 {
		t.Fatalf("forgot %d agents", n)
	}
	if _, in, _ := th.ledger.TenantOf(old.DID()); in {
		t.Fatal("the forgotten device is still in its tenant")
	}
	if !th.enrolled(t, th.a, next) {
		t.Error("the second device was not admitted once the first was forgotten")
	}
}
