package relay

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/store/rollouts"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// tenantRollouts is a tenant harness whose relay keeps its rollouts and
// its audit log in real bbolt files, with two devices of tenant a, one of b and one in no
// tenant (admitted by the host), all linked once.
type tenantRollouts struct {
	*tenantHarness
	a1, a2, b1, loose *did.PrivateKey
}

func newTenantRollouts(t *testing.T) *tenantRollouts {
	st := rolloutStore(t)
	al, err := audit.OpenBolt(filepath.Join(t.TempDir(), "audit.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { al.Close() })
	tr := &tenantRollouts{tenantHarness: newTenantHarness(t, tenancy.Quotas{}, func(c *Config) { c.Stores.Rollouts, c.Stores.Audit = st, al }),
		a1: didtest.Key(t, 70), a2: didtest.Key(t, 71), b1: didtest.Key(t, 72), loose: didtest.Key(t, 73)}
	if !tr.enrolled(t, tr.a, tr.a1) || !tr.enrolled(t, tr.a, tr.a2) || !tr.enrolled(t, tr.b, tr.b1) {
		t.Fatal("enrolment failed")
	}
	tr.publishOffline(t, tr.loose, "hourly_wake", deviceOpts{})
	return tr
}

// startedTenantRollout is newTenantRollouts with a's operator's rollout
// agent-1.4.0 started over a's two devices.
func startedTenantRollout(t *testing.T) *tenantRollouts {
	t.Helper()
	tr := newTenantRollouts(t)
	if r := tr.req(t, "POST", tr.a, "", tr.opA, startSpec("agent-1.4.0")); r.status != 200 || devicesOf(r) != 2 {
		t.Fatalf("a's start: %d %s", r.status, r.body)
	}
	return tr
}

// req is an operator request as k to the rollouts of owner's tenant
// (owner nil: the relay's own), at root+suffix.
func (tr *tenantRollouts) req(t *testing.T, method string, owner *did.PrivateKey, suffix string, k *did.PrivateKey, body any) resp {
	t.Helper()
	root := operatorapi.RolloutsPath
	if owner != nil {
		root = operatorapi.TenantRolloutsPath(owner.DID().String())
	}
	return tr.rolloutReq(t, method, root+suffix, k, body)
}

// startSpec is a one-wave rollout id of 1.4.0 over devices (none: every
// device of the scope).
func startSpec(id string, devices ...*did.PrivateKey) operatorapi.RolloutStart {
	s := operatorapi.RolloutStart{ID: id, Target: operatorapi.RolloutTarget{Name: "torpor-agent/1.4.0", Version: "1.4.0"}, Percents: []int{100}}
	for _, d := range devices {
		s.Devices = append(s.Devices, d.DID().String())
	}
	return s
}

func devicesOf(r resp) float64 {
	counts, _ := r.json["counts"].(map[string]any)
	return counts["devices"].(float64)
}

func rolloutIDs(t *testing.T, r resp) []string {
	t.Helper()
	var l operatorapi.RolloutList
	if err := json.Unmarshal(r.body, &l); err != nil || r.status != 200 {
		t.Fatalf("a rollout list: %d %s", r.status, r.body)
	}
	var ids []string
	for _, ro := range l.Rollouts {
		ids = append(ids, ro.ID)
	}
	return ids
}

// TestTenantRolloutsTakeOnlyTheTenantsDevices: a tenant's operator starts
// a rollout over every device of its tenant (a's two, not b's nor the
// relay's); naming a device of another tenant, of none, or an unknown DID
// is refused 403 naming the device, and nothing is stored; another
// tenant's operator and the host cannot start one for the tenant, and the
// start is in the audit log with the tenant.
func TestTenantRolloutsTakeOnlyTheTenantsDevices(t *testing.T) {
	tr := newTenantRollouts(t)
	if r := tr.req(t, "POST", tr.a, "", tr.opA, startSpec("v2")); r.status != 200 || devicesOf(r) != 2 || r.json["state"] != "running" {
		t.Fatalf("a's operator starting a rollout of every device of a: %d %s; want a's 2 devices", r.status, r.body)
	}
	if r := tr.req(t, "POST", tr.a, "", tr.opA, startSpec("v3", tr.a2)); r.status != 200 || devicesOf(r) != 1 {
		t.Errorf("a's operator naming a's device: %d %s", r.status, r.body)
	}
	stranger := didtest.Key(t, 74)
	for name, dev := range map[string]*did.PrivateKey{"b's device": tr.b1, "a device in no tenant": tr.loose, "an unknown DID": stranger} {
		r := tr.req(t, "POST", tr.a, "", tr.opA, startSpec("v4", tr.a1, dev))
		if r.status != 403 || r.json["error"] != "not_tenant_operator" || !strings.Contains(r.json["message"].(string), dev.DID().String()) {
			t.Errorf("a's operator naming %s: %d %s; want 403 not_tenant_operator naming it", name, r.status, r.body)
		}
	}
	for name, k := range map[string]*did.PrivateKey{"b's operator": tr.opB, "the host": tr.host, "a's device": tr.a1} {
		if r := tr.req(t, "POST", tr.a, "", k, startSpec("v5")); r.status != 403 {
			t.Errorf("%s starting a rollout of a's: %d %s; want 403", name, r.status, r.body)
		}
	}
	if ids := rolloutIDs(t, tr.req(t, "GET", tr.a, "", tr.opA, nil)); !slices.Equal(ids, []string{"v2", "v3"}) {
		t.Errorf("a's rollouts after the refusals: %v, want [v2 v3]", ids)
	}
	if r := tr.req(t, "POST", tr.b, "", tr.opB, startSpec("v2")); r.status != 200 || devicesOf(r) != 1 {
		t.Errorf("b's operator starting its own v2 beside a's: %d %s; want b's one device", r.status, r.body)
	}
	page, err := tr.relay.cfg.Stores.Audit.List(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	found := slices.ContainsFunc(page.Records, func(rec audit.Record) bool {
		return rec.Action == audit.ActionRollout && rec.Operator == tr.opA.DID().String() && rec.Device == tr.a.DID().String() &&
			rec.Detail == "start v2 of 1.4.0" && rec.Outcome == audit.OK
	})
	if !found {
		t.Errorf("no audit record of a's start of v2 with the tenant: %+v", page.Records)
	}
}

// TestTenantRolloutsHiddenFromOthers: a's rollout v2 is seen and changed
// by a's operator only: the host's list and console show its own v2 (same
// id, no conflict), the host cannot read or pause a's even by its stored
// key, b's operator neither lists, reads nor aborts it; once a's owner
// names the host an operator, the host may read it (checkHostNamed).
func TestTenantRolloutsHiddenFromOthers(t *testing.T) {
	tr := newTenantRollouts(t)
	if r := tr.req(t, "POST", tr.a, "", tr.opA, startSpec("v2")); r.status != 200 {
		t.Fatalf("a's start: %d %s", r.status, r.body)
	}
	if r := tr.req(t, "POST", nil, "", tr.host, startSpec("v2")); r.status != 200 || devicesOf(r) != 1 {
		t.Fatalf("the host's own v2 beside a's: %d %s; want the relay's one device", r.status, r.body)
	}
	if ids := rolloutIDs(t, tr.req(t, "GET", nil, "", tr.host, nil)); len(ids) != 1 {
		t.Errorf("the host's list: %v, want its own v2 alone", ids)
	}
	if r := tr.req(t, "GET", nil, "/v2", tr.host, nil); r.status != 200 || devicesOf(r) != 1 {
		t.Errorf("the host reading v2: %d %s; want its own, 1 device", r.status, r.body)
	}
	key := "/" + url.PathEscape(rollouts.Key(tr.a.DID().String(), "v2"))
	for _, c := range []struct {
		name, method, suffix string
		owner, k             *did.PrivateKey
		want                 int
	}{
		{"the host reads a's by its key", "GET", key, nil, tr.host, 404},
		{"the host pauses a's by its key", "POST", key + "/pause", nil, tr.host, 404},
		{"the host reads a's", "GET", "/v2", tr.a, tr.host, 403},
		{"the host lists a's", "GET", "", tr.a, tr.host, 403},
		{"the host pauses a's", "POST", "/v2/pause", tr.a, tr.host, 403},
		{"b's operator reads a's", "GET", "/v2", tr.a, tr.opB, 403},
		{"b's operator aborts a's", "POST", "/v2/abort", tr.a, tr.opB, 403},
		{"b's operator aborts v2 in b", "POST", "/v2/abort", tr.b, tr.opB, 404},
		{"a's operator in the relay's", "GET", "/v2", nil, tr.opA, 403},
	} {
		if r := tr.req(t, c.method, c.owner, c.suffix, c.k, operatorapi.RolloutAction{Reason: "no"}); r.status != c.want {
			t.Errorf("%s: %d %s; want %d", c.name, r.status, r.body, c.want)
		}
	}
	if ids := rolloutIDs(t, tr.req(t, "GET", tr.b, "", tr.opB, nil)); len(ids) != 0 {
		t.Errorf("b's list: %v, want none", ids)
	}
	if r := tr.req(t, "GET", tr.a, "/v2", tr.opA, nil); r.status != 200 || r.json["state"] != "running" || devicesOf(r) != 2 {
		t.Fatalf("a's v2 after the others' tries: %d %s; want running, 2 devices", r.status, r.body)
	}
	if rs, err := (consoleRollouts{tr.relay.rollouts}).Rollouts(context.Background()); err != nil || len(rs) != 1 || rs[0].Counts.Devices != 1 {
		t.Errorf("the host's console rollouts: %+v, %v; want its own v2 alone", rs, err)
	}
	if r := tr.req(t, "POST", tr.a, "/v2/abort", tr.opA, operatorapi.RolloutAction{Reason: "bad build"}); r.status != 200 || r.json["state"] != "aborted" {
		t.Errorf("a's operator aborts a's v2: %d %s", r.status, r.body)
	}
	if r := tr.req(t, "GET", nil, "/v2", tr.host, nil); r.status != 200 || r.json["state"] != "running" {
		t.Errorf("the host's v2 after a's abort: %d %s; want running", r.status, r.body)
	}
	if _, err := tr.relay.Registry().Gather(); err != nil {
		t.Errorf("metrics with the relay's and a tenant's v2: %v", err)
	}
	tr.checkHostNamed(t)
}

// checkHostNamed: once a's owner names the host an operator of a, the
// host reads a's v2.
func (tr *tenantRollouts) checkHostNamed(t *testing.T) {
	t.Helper()
	list, err := tenancy.SignOperatorList(tr.a, tenancy.OperatorList{Operators: []string{tr.opA.DID().String(), tr.host.DID().String()}}, t0.Add(time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.ledger.SetOperators(list); err != nil {
		t.Fatal(err)
	}
	if r := tr.req(t, "GET", tr.a, "/v2", tr.host, nil); r.status != 200 || r.json["state"] != "aborted" {
		t.Errorf("the host, named by a's owner, reads a's v2: %d %s", r.status, r.body)
	}
}

// TestTenantRolloutOffersItsDevices: a tenant's rollout of every device
// of the tenant offers each its target (under the rollout's own id) in
// its state-ok, and the outcome each device's signed status reports is
// counted in the tenant's rollout; the other tenant's device and the
// relay's are offered nothing.
func TestTenantRolloutOffersItsDevices(t *testing.T) {
	tr := newTenantRollouts(t)
	if r := tr.req(t, "POST", tr.a, "", tr.opA, startSpec("agent-1.4.0")); r.status != 200 {
		t.Fatalf("a's start: %d %s", r.status, r.body)
	}
	tr.wakeForUpdate(t, tr.a1, "installed")
	tr.wakeForUpdate(t, tr.a2, "rolled-back")
	var got operatorapi.Rollout
	r := tr.req(t, "GET", tr.a, "/agent-1.4.0", tr.opA, nil)
	if err := json.Unmarshal(r.body, &got); err != nil || got.Counts.Installed != 1 || got.Counts.RolledBack != 1 || got.State != "done" ||
		len(got.Failures) != 1 || got.Failures[0].Device != tr.a2.DID().String() {
		t.Errorf("a's rollout after its devices reported: %d %s; want 1 installed, a2 rolled back, done", r.status, r.body)
	}
	for _, dev := range []*did.PrivateKey{tr.b1, tr.loose} {
		c := tr.dial(t, dev)
		if a, err := c.Publish(context.Background(), tr.state(t, dev, c.Hello(), "hourly_wake", deviceOpts{})); err != nil || a.Offer != nil {
			t.Errorf("%s, not in a, offered %+v, %v", dev.DID(), a.Offer, err)
		}
		c.Close()
	}
}

// TestTenantRolloutNotOfferedOnceLeft: a device that leaves its tenant
// after the tenant's rollout started (taken out of the tenant's ledger) is
// no longer offered the rollout's target: its wake finds it out of the
// tenant and records it left, so that the rollout is done once the
// tenant's other device installed.
func TestTenantRolloutNotOfferedOnceLeft(t *testing.T) {
	tr := startedTenantRollout(t)
	if err := tr.ledger.Forget(tr.a2.DID()); err != nil {
		t.Fatal(err)
	}
	c := tr.dial(t, tr.a2)
	defer c.Close()
	if a, err := c.Publish(context.Background(), tr.state(t, tr.a2, c.Hello(), "hourly_wake", deviceOpts{})); err != nil || a.Offer != nil {
		t.Errorf("a device that left a offered %+v, %v; want nothing", a.Offer, err)
	}
	tr.wakeForUpdate(t, tr.a1, "installed")
	tr.checkLeft(t, tr.a2, "no longer in the tenant at a wake")
}

// TestTenantRolloutForgottenLeaves: a device the relay forgets for its
// silence leaves its tenant's rollout at once (it may never wake again),
// so that the rollout is done once the tenant's other device installed;
// enrolled in the tenant again, it is not offered the build, and what its
// status reports is not counted.
func TestTenantRolloutForgottenLeaves(t *testing.T) {
	tr := startedTenantRollout(t)
	if err := tr.relay.forget(context.Background(), tr.a2.DID().String(), 11, t0); err != nil {
		t.Fatal(err)
	}
	if _, in, err := tr.ledger.TenantOf(tr.a2.DID()); in || err != nil {
		t.Fatalf("a forgotten device in its tenant: %v, %v", in, err)
	}
	tr.wakeForUpdate(t, tr.a1, "installed")
	tr.checkLeft(t, tr.a2, "forgotten for its silence")
	if !tr.enrolled(t, tr.a, tr.a2) {
		t.Fatal("enrolling the forgotten device again failed")
	}
	c := tr.dial(t, tr.a2)
	defer c.Close()
	s := tr.state(t, tr.a2, c.Hello(), "hourly_wake", deviceOpts{})
	s.Status = updateStatus(t, tr.a2, "rolled-back", "1.4.0", "trial: exited with status 2")
	if a, err := c.Publish(context.Background(), s); err != nil || a.Offer != nil {
		t.Errorf("the device back in a offered %+v, %v; want nothing", a.Offer, err)
	}
	tr.checkLeft(t, tr.a2, "forgotten for its silence")
}

// TestTenantRolloutTakenOutLeaves: a device taken out of its tenant by
// hand (its ledger entry removed, not by the relay's forgetting) that
// never wakes again is left in the tenant's rollout at the relay's next
// pass (rolloutsOutOfTenant, which Run makes every PurgeInterval), so
// that the rollout is done once the tenant's other device installed; a
// device of the tenant stays pending until it reports.
func TestTenantRolloutTakenOutLeaves(t *testing.T) {
	tr := startedTenantRollout(t)
	if err := tr.ledger.Forget(tr.a2.DID()); err != nil {
		t.Fatal(err)
	}
	tr.relay.rolloutsOutOfTenant(t.Context())
	r := tr.req(t, "GET", tr.a, "/agent-1.4.0", tr.opA, nil)
	if counts, _ := r.json["counts"].(map[string]any); counts["pending"] != 1.0 || counts["left"] != 1.0 {
		t.Fatalf("a's rollout after the pass: %d %s; want a1 pending, a2 left", r.status, r.body)
	}
	tr.wakeForUpdate(t, tr.a1, "installed")
	tr.checkLeft(t, tr.a2, outOfTenantReason)
}

// TestTenantRolloutRetiredNotTakenOut: a retired device that its tenant's
// ledger no longer holds, its successor in its place, is not left by the
// relay's pass over the tenant's rollouts before its place there is
// carried (the two steps of noteRetired; another relay may pass in
// between): its state names its successor, which takes its place.
func TestTenantRolloutRetiredNotTakenOut(t *testing.T) {
	tr := startedTenantRollout(t)
	ctx, old, next := t.Context(), tr.a2.DID().String(), didtest.Key(t, 75).DID().String()
	st, err := tr.relay.cfg.Stores.States.Get(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	st.Successor = next
	if err := tr.relay.cfg.Stores.States.Put(ctx, old, st, nil, nil); err != nil {
		t.Fatal(err)
	}
	tr.relay.carryTenant(old, next)
	tr.relay.rolloutsOutOfTenant(ctx)
	tr.relay.carryRollouts(ctx, old, next)
	r := tr.req(t, "GET", tr.a, "/agent-1.4.0", tr.opA, nil)
	if counts, _ := r.json["counts"].(map[string]any); counts["pending"] != 2.0 || counts["left"] != nil {
		t.Fatalf("a's rollout: %d %s; want 2 pending, none left", r.status, r.body)
	}
}

// checkLeft checks that a's rollout agent-1.4.0 is done, a1 installed and
// gone left for reason.
func (tr *tenantRollouts) checkLeft(t *testing.T, gone *did.PrivateKey, reason string) {
	t.Helper()
	var got operatorapi.Rollout
	r := tr.req(t, "GET", tr.a, "/agent-1.4.0", tr.opA, nil)
	if err := json.Unmarshal(r.body, &got); err != nil || got.State != "done" || got.Counts.Installed != 1 || got.Counts.Left != 1 || got.Counts.Pending != 0 {
		t.Fatalf("a's rollout: %d %s; want done, 1 installed, 1 left", r.status, r.body)
	}
	if len(got.Failures) != 1 || got.Failures[0].Device != gone.DID().String() || got.Failures[0].Outcome != "left" || got.Failures[0].Reason != reason {
		t.Errorf("a's rollout lists %+v; want %s left: %s", got.Failures, gone.DID(), reason)
	}
}

// TestTenantRolloutRetiredCarries: a device whose key is retired is the
// same device under its successor's key: the successor takes its place in
// the tenant and in its tenant's rollout, is offered the build there and
// its install counted, and the rollout is done without an operator.
func TestTenantRolloutRetiredCarries(t *testing.T) {
	tr := startedTenantRollout(t)
	next := didtest.Key(t, 75)
	tr.relay.noteRetired(context.Background(), tr.a2.DID().String(), agents.State{}, agents.State{Successor: next.DID().String()})
	if owner, in, err := tr.ledger.TenantOf(next.DID()); !in || err != nil || owner != tr.a.DID() {
		t.Fatalf("the successor's tenant: %v, %v, %v; want a", owner, in, err)
	}
	tr.wakeForUpdate(t, tr.a1, "installed")
	tr.wakeForUpdate(t, next, "installed")
	var got operatorapi.Rollout
	r := tr.req(t, "GET", tr.a, "/agent-1.4.0", tr.opA, nil)
	if err := json.Unmarshal(r.body, &got); err != nil || got.State != "done" || got.Counts.Devices != 2 || got.Counts.Installed != 2 || got.Counts.Left != 0 {
		t.Fatalf("a's rollout: %d %s; want done, 2 installed", r.status, r.body)
	}
}
