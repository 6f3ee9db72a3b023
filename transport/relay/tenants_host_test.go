package relay

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// hostWorld is a hosted relay with the console, per-agent metrics and
// an audit log: tenant a with two devices (one linked, so awake, one
// asleep with a record queued), tenant b with one, and one device in no
// tenant.
type hostWorld struct {
	*tenantHarness
	devA1, devA2, devB, loose *did.PrivateKey
}

func newHostWorld(t *testing.T, mods ...func(*Config)) *hostWorld {
	mods = append([]func(*Config){func(c *Config) {
		c.Ops.Console = &ConsoleConfig{Operators: []string{didtest.Key(t, 62).DID().String()}, Secret: make([]byte, 32)}
		c.Ops.PerAgentMetrics = true
		al, err := audit.OpenBolt(filepath.Join(t.TempDir(), "audit.db"), 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { al.Close() })
		c.Stores.Audit = al
	}}, mods...)
	w := &hostWorld{tenantHarness: newTenantHarness(t, tenancy.Quotas{Devices: 5, QueuedBytes: 4096}, mods...),
		devA1: didtest.Key(t, 70), devA2: didtest.Key(t, 71), devB: didtest.Key(t, 72), loose: didtest.Key(t, 73)}
	for dev, owner := range map[*did.PrivateKey]*did.PrivateKey{w.devA1: w.a, w.devA2: w.a, w.devB: w.b} {
		if !w.enrolled(t, owner, dev) {
			t.Fatal("enrolment failed")
		}
	}
	w.publishOffline(t, w.loose, "sleep", deviceOpts{})
	w.post(t, w.devA1.DID(), didtest.Key(t, 90), "1.0", sendV1)
	c := w.device(t, w.devA2, "sleep", deviceOpts{}) // linked until the test ends: awake
	t.Cleanup(func() { c.Close() })
	return w
}

// fleetGet gets path of the console's JSON API with k's fleet token.
func (th *harness) fleetGet(t *testing.T, k *did.PrivateKey, path string) resp {
	t.Helper()
	tok, err := bearer.IssuePurpose(k, th.srv.URL, bearer.PurposeFleet, th.clk.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", th.srv.URL+path, nil)
	req.Header.Set("Authorization", bearer.Authorization(tok))
	return th.do(t, req)
}

// page gets path of the console's HTML as k, logged in by a login link.
func (th *harness) page(t *testing.T, k *did.PrivateKey, path string) resp {
	t.Helper()
	tok, err := bearer.IssuePurpose(k, th.srv.URL, bearer.PurposeFleetLogin, th.clk.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, err := hc.Get(th.srv.URL + "/fleet/login?token=" + url.QueryEscape(tok))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusSeeOther || len(r.Cookies()) == 0 {
		t.Fatalf("login: %d", r.StatusCode)
	}
	req, _ := http.NewRequest("GET", th.srv.URL+path, nil)
	req.AddCookie(r.Cookies()[0])
	return th.do(t, req)
}

// tenantsOf decodes a TenantList answer.
func tenantsOf(t *testing.T, r resp) operatorapi.TenantList {
	t.Helper()
	var l operatorapi.TenantList
	if err := json.Unmarshal(r.body, &l); r.status != 200 || err != nil {
		t.Fatalf("tenants: %d %s", r.status, r.body)
	}
	return l
}

// TestTenantsConsoleForTheHost: the host's page of tenants and
// /fleet/api/tenants list both tenants with exact counts and totals, and
// the header links the page for the host only; a tenant's operator is
// refused both.
func TestTenantsConsoleForTheHost(t *testing.T) {
	w := newHostWorld(t)
	l := tenantsOf(t, w.fleetGet(t, w.host, "/fleet/api/tenants"))
	a, b := w.a.DID().String(), w.b.DID().String()
	month := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // the byte_hours quota's period of the harness's clock
	want := map[string]operatorapi.Tenant{
		a: {Owner: a, Quotas: tenancy.Quotas{Devices: 5, QueuedBytes: 4096}, Devices: 2, States: operatorapi.Summary{Devices: 2, Awake: 1, Offline: 1},
			QueuedBytes: int64(len(sendV1)), Operators: 1, ByteHoursPeriod: month},
		b: {Owner: b, Devices: 1, States: operatorapi.Summary{Devices: 1, Offline: 1}, Operators: 1, ByteHoursPeriod: month},
	}
	if len(l.Tenants) != 2 {
		t.Fatalf("%d tenants, want 2: %+v", len(l.Tenants), l.Tenants)
	}
	for _, tt := range l.Tenants {
		if tt != want[tt.Owner] {
			t.Errorf("tenant %+v,\nwant %+v", tt, want[tt.Owner])
		}
	}
	total := operatorapi.Tenant{Devices: 3, States: operatorapi.Summary{Devices: 3, Awake: 1, Offline: 2}, QueuedBytes: int64(len(sendV1)), Operators: 2}
	if l.Total != total || l.NoTenant != (operatorapi.Summary{Devices: 1, Offline: 1, AwaitingAdmission: 1}) {
		t.Errorf("total %+v, no tenant %+v; want %+v and one offline device on probation", l.Total, l.NoTenant, total)
	}
	page := w.page(t, w.host, "/fleet/tenants")
	for _, s := range []string{`id="tenant-` + a + `"`, `id="tenant-` + b + `"`, `id="tenants-total"`, `<a href="/fleet/tenants">Tenants</a>`, `>byte-hours</th>`} {
		if page.status != 200 || !bytes.Contains(page.body, []byte(s)) {
			t.Errorf("the host's page of tenants (%d) lacks %s", page.status, s)
		}
	}
	if r := w.fleetGet(t, w.opA, "/fleet/api/tenants"); r.status != http.StatusForbidden {
		t.Errorf("a's operator got /fleet/api/tenants: %d, want 403", r.status)
	}
	if r := w.page(t, w.opA, "/fleet/tenants"); r.status != http.StatusForbidden {
		t.Errorf("a's operator got /fleet/tenants: %d, want 403", r.status)
	}
	if r := w.page(t, w.opA, "/fleet"); r.status != 200 || bytes.Contains(r.body, []byte(`href="/fleet/tenants"`)) {
		t.Errorf("a's operator's console (%d) links the page of tenants", r.status)
	}
}

// TestTenantsHostSeesNoDeviceUnlessAllowed: no DID of a tenant's device
// is in the host's page of tenants, /fleet/api/tenants, GET
// /operator/tenants or /metrics until the tenant's owner lets the host see
// its devices; then that tenant's (and only its) are in /metrics and
// behind the page's link.
func TestTenantsHostSeesNoDeviceUnlessAllowed(t *testing.T) {
	w := newHostWorld(t)
	all := []*did.PrivateKey{w.devA1, w.devA2, w.devB}
	answers := func() map[string][]byte {
		return map[string][]byte{
			"the page":           w.page(t, w.host, "/fleet/tenants").body,
			"/fleet/api/tenants": w.fleetGet(t, w.host, "/fleet/api/tenants").body,
			"/operator/tenants":  w.asOperator(t, "GET", "/operator/tenants", w.host, nil).body,
			"/metrics":           w.get(t, "/metrics").body,
		}
	}
	for what, body := range answers() {
		for _, dev := range all {
			if bytes.Contains(body, []byte(dev.DID().String())) {
				t.Errorf("%s names a tenant's device %s", what, dev.DID())
			}
		}
	}
	if m := w.get(t, "/metrics").body; !bytes.Contains(m, []byte(`torpor_relay_agent_asleep{agent="`+w.loose.DID().String())) {
		t.Fatal("/metrics has no per-agent series of the device in no tenant")
	}
	list, _ := tenancy.SignOperatorList(w.b, tenancy.OperatorList{Operators: []string{w.opB.DID().String()}, HostSeesDevices: true}, t0.Add(time.Minute), 0)
	if _, err := w.ledger.SetOperators(list); err != nil {
		t.Fatal(err)
	}
	b := w.b.DID().String()
	link := `<a href="/fleet?tenant=` + strings.ReplaceAll(b, ":", "%3a") + `">` // html/template escapes the colons
	if p := w.page(t, w.host, "/fleet/tenants"); !bytes.Contains(p.body, []byte(link)) {
		t.Errorf("the page of tenants has no link to b's devices once b's owner allowed it:\n%s", p.body)
	}
	m := w.get(t, "/metrics").body
	for _, fam := range []string{"torpor_relay_agent_asleep", "torpor_relay_agent_queue_messages"} {
		if !bytes.Contains(m, []byte(fam+`{agent="`+w.devB.DID().String())) {
			t.Errorf("/metrics has no %s of b's device once b's owner allowed it", fam)
		}
	}
	for _, dev := range []*did.PrivateKey{w.devA1, w.devA2} {
		if bytes.Contains(m, []byte(dev.DID().String())) {
			t.Errorf("/metrics names a's device %s", dev.DID())
		}
	}
	if _, ids := w.fleetDIDs(t, w.host, "/fleet/api/devices?tenant="+url.QueryEscape(b)); !slices.Equal(ids, []string{w.devB.DID().String()}) {
		t.Errorf("the host's devices of tenant b: %v, want b's one", ids)
	}
	if _, ids := w.fleetDIDs(t, w.host, "/fleet/api/devices?tenant="+url.QueryEscape(w.a.DID().String())); len(ids) != 0 {
		t.Errorf("the host's devices of tenant a: %v, want none (not allowed)", ids)
	}
	if p := w.page(t, w.host, "/fleet?tenant="+url.QueryEscape(b)); !bytes.Contains(p.body, []byte(`id="row-`+w.devB.DID().String())) ||
		bytes.Contains(p.body, []byte(w.loose.DID().String())) {
		t.Errorf("the host's page of b's devices (%d) lacks b's device or shows another", p.status)
	}
}

// TestFleetDevicesByTenantBounded: torpor_relay_fleet_devices counts each
// tenant's devices by state under its owner DID up to
// --tenant-metrics-limit (here 1), the other tenants' under "other" and
// the devices in no tenant under "": every state of those three labels
// and no other series.
func TestFleetDevicesByTenantBounded(t *testing.T) {
	w := newHostWorld(t, func(c *Config) { c.Ops.TenantMetricsLimit = 1 })
	first, other := w.a.DID().String(), w.b.DID().String()
	wantFirst, wantOther := map[string]float64{"awake": 1, "offline": 1}, map[string]float64{"offline": 1}
	if other < first { // the ledger lists tenants by owner DID: the first one seen is labelled
		first, other, wantFirst, wantOther = other, first, wantOther, wantFirst
	}
	want := map[string]map[string]float64{first: wantFirst, "other": wantOther, "": {"offline": 1}}
	mfs, err := w.relay.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != "torpor_relay_fleet_devices" {
			continue
		}
		for _, m := range mf.GetMetric() {
			n++
			tenant, state := labelValue(m, "tenant"), labelValue(m, "state")
			counts, ok := want[tenant]
			if !ok {
				t.Errorf("a series with tenant %q", tenant)
				continue
			}
			if got := m.GetGauge().GetValue(); got != counts[state] {
				t.Errorf("torpor_relay_fleet_devices{state=%q,tenant=%q} = %v, want %v", state, tenant, got, counts[state])
			}
		}
	}
	if n != 3*len(operatorapi.States) {
		t.Errorf("%d series of torpor_relay_fleet_devices, want %d (3 tenant labels × %d states)", n, 3*len(operatorapi.States), len(operatorapi.States))
	}
}

// TestTenantsPageOnlyOnAHostedRelay: a relay without tenants serves no
// page of tenants (404) and its header does not link one.
func TestTenantsPageOnlyOnAHostedRelay(t *testing.T) {
	host := didtest.Key(t, 62)
	h := newHarness(t, func(c *Config) {
		c.Ops.Console = &ConsoleConfig{Operators: []string{host.DID().String()}, Secret: make([]byte, 32)}
	})
	if r := h.page(t, host, "/fleet"); r.status != 200 || bytes.Contains(r.body, []byte(`href="/fleet/tenants"`)) {
		t.Errorf("the console of a relay without tenants (%d) links a page of tenants", r.status)
	}
	if r := h.fleetGet(t, host, "/fleet/api/tenants"); r.status != http.StatusNotFound {
		t.Errorf("/fleet/api/tenants without tenants: %d, want 404", r.status)
	}
}
