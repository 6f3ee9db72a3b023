package jsstore_test

import (
	"slices"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/store/rollouts"
	"github.com/torpor-dev/torpor/store/rollouts/rolloutstest"
	"github.com/torpor-dev/torpor/store/tenants"
	"github.com/torpor-dev/torpor/transport/relay/rollout"
)

// TestRolloutsContract runs rolloutstest against Rollouts on a real
// nats-server per check; every store a check opens is a new connection
// (as another relay) to that check's server.
func TestRolloutsContract(t *testing.T) {
	connect := perCheck(onSingle)
	rolloutstest.Run(t, func(t testing.TB) rollouts.Store {
		s := connect(t).OwnRollouts()
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestRolloutAcrossRelays: a rollout started through one connection (a
// relay) is offered and reported through another, and a third, opened
// after the first two closed, finds every report; a tenant's rollout of
// the same id beside it (docs/tenants.md) is kept apart under its key and
// offered under its own id.
func TestRolloutAcrossRelays(t *testing.T) {
	ctx := t.Context()
	spec := rollout.Spec{ID: "agent-2", Target: rollout.Target{Name: "torpor-agent/2", Version: "2"}, Percents: []int{100}}
	ma, mb, third := rolloutRelays(t, single(t), spec, []rollout.Device{{ID: "did:key:zA", Minute: 1}, {ID: "did:key:zB", Minute: 2}})
	tspec := spec
	tspec.Tenant = "did:key:zOwner"
	if _, err := ma.Start(ctx, tspec, []rollout.Device{{ID: "did:key:zT", Minute: 3}}); err != nil {
		t.Fatalf("a tenant's rollout of the same id: %v", err)
	}
	if id, tg, ok, err := mb.OfferID(ctx, "did:key:zT"); err != nil || !ok || id != "agent-2" || tg.Version != "2" {
		t.Fatalf("the tenant's offer through the second relay = %s, %+v, %v, %v", id, tg, ok, err)
	}
	mb.Report(ctx, "did:key:zT", "2", rollout.Installed, "")
	if tg, ok, err := mb.Offer(ctx, "did:key:zB"); err != nil || !ok || tg.Version != "2" {
		t.Fatalf("Offer through the second relay = %+v, %v, %v", tg, ok, err)
	}
	mb.Report(ctx, "did:key:zB", "2", rollout.RolledBack, "trial: exited with status 2")
	ma.Report(ctx, "did:key:zA", "2", rollout.Installed, "")
	mc := third()
	r, err := mc.Get(ctx, "agent-2")
	if err != nil || r.Counts().Installed != 1 || r.Counts().RolledBack != 1 || r.State != rollout.Done {
		t.Fatalf("through a third connection: %+v, %v", r, err)
	}
	r, err = mc.Get(ctx, rollouts.Key("did:key:zOwner", "agent-2"))
	if err != nil || r.Tenant != "did:key:zOwner" || r.Counts().Devices != 1 || r.Counts().Installed != 1 {
		t.Fatalf("the tenant's rollout through a third connection: %+v, %v", r, err)
	}
}

// TestRolloutLeftAcrossRelays: a device one relay forgets
// (rollout.Manager.Forget) is left in the tenant's rollout for
// every relay: another is offered nothing for it and does not count its
// report, and the rollout is done once the tenant's other device
// installed, as a third connection finds it.
func TestRolloutLeftAcrossRelays(t *testing.T) {
	ctx := t.Context()
	spec := rollout.Spec{ID: "agent-2", Tenant: "did:key:zOwner", Target: rollout.Target{Name: "torpor-agent/2", Version: "2"}, Percents: []int{100}}
	ma, mb, third := rolloutRelays(t, single(t), spec, []rollout.Device{{ID: "did:key:zA", Minute: 1}, {ID: "did:key:zB", Minute: 2}})
	if n, err := ma.Forget(ctx, "did:key:zB", "forgotten for its silence"); n != 1 || err != nil {
		t.Fatalf("Forget through the first relay = %d, %v", n, err)
	}
	if _, ok, err := mb.Offer(ctx, "did:key:zB"); ok || err != nil {
		t.Errorf("the device that left offered through the second relay: %v, %v", ok, err)
	}
	if found, err := mb.Report(ctx, "did:key:zB", "2", rollout.RolledBack, "trial"); found || err != nil {
		t.Errorf("the report of the device that left = %v, %v; want not counted", found, err)
	}
	mb.Report(ctx, "did:key:zA", "2", rollout.Installed, "")
	r, err := third().Get(ctx, rollouts.Key(spec.Tenant, spec.ID))
	if err != nil || r.State != rollout.Done || r.Counts().Installed != 1 || r.Counts().Left != 1 || r.Results["did:key:zB"].Outcome != rollout.Left {
		t.Fatalf("through a third connection: %+v, %v; want done, 1 installed, zB left", r, err)
	}
}

// TestRolloutTakenOutAcrossRelays: a device taken out of its tenant by
// hand through one connection to the ledger (Tenants.Forget, not the
// relay's forgetting) is left in the tenant's rollout once a relay on
// another connection passes over the rollouts with the tenant's devices
// as the ledger holds them (rollout.Manager.LeaveTenants), so that a
// third connection finds the rollout done without it.
func TestRolloutTakenOutAcrossRelays(t *testing.T) {
	ctx, srv := t.Context(), single(t)
	owner, in, out := didtest.Key(t, 1).DID(), didtest.Key(t, 2).DID(), didtest.Key(t, 3).DID()
	la, lb := ledgerConn(t, srv), ledgerConn(t, srv)
	if err := la.Put(owner, tenants.Quotas{}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []did.DID{in, out} {
		if err := la.Enrol(owner, d); err != nil {
			t.Fatal(err)
		}
	}
	spec := rollout.Spec{ID: "agent-2", Tenant: owner.String(), Target: rollout.Target{Name: "torpor-agent/2", Version: "2"}, Percents: []int{100}}
	ma, mb, third := rolloutRelays(t, srv, spec, []rollout.Device{{ID: in.String(), Minute: 1}, {ID: out.String(), Minute: 2}})
	if err := la.Forget(out); err != nil {
		t.Fatal(err)
	}
	members := func(tenant string) (func(string) bool, error) {
		o, err := did.Parse(tenant)
		if err != nil {
			return nil, err
		}
		devs, err := lb.Devices(o)
		return func(d string) bool { return slices.Contains(devs, d) }, err
	}
	if n, err := mb.LeaveTenants(ctx, members, "taken out of the tenant"); n != 1 || err != nil {
		t.Fatalf("LeaveTenants through the second relay = %d, %v; want 1", n, err)
	}
	if n, err := ma.LeaveTenants(ctx, members, "again"); n != 0 || err != nil {
		t.Errorf("LeaveTenants through the first relay after it = %d, %v; want no change", n, err)
	}
	mb.Report(ctx, in.String(), "2", rollout.Installed, "")
	r, err := third().Get(ctx, rollouts.Key(spec.Tenant, spec.ID))
	if err != nil || r.State != rollout.Done || r.Counts().Installed != 1 || r.Counts().Left != 1 {
		t.Fatalf("through a third connection: %+v, %v; want done, 1 installed, 1 left", r, err)
	}
	if res := r.Results[out.String()]; res.Outcome != rollout.Left || res.Reason != "taken out of the tenant" {
		t.Errorf("the device taken out: %+v; want left, taken out of the tenant", res)
	}
}

// ledgerConn is the tenants ledger through a new connection to srv,
// closed when the test ends.
func ledgerConn(t *testing.T, srv *jsserver.Server) *jsstore.Tenants {
	t.Helper()
	c := open(t, srv)
	t.Cleanup(func() { c.Close() })
	return c.Tenants(nil)
}

// TestHostRolloutForgetAndCarryAcrossRelays: in the relay's own rollout,
// a device one relay forgets (rollout.Manager.Forget) is left for every
// relay, and the successor of a device whose key one relay retired
// (rollout.Manager.Carry) is offered the target by another and its report
// counted there, so that the rollout is done, as a third connection
// finds it.
func TestHostRolloutForgetAndCarryAcrossRelays(t *testing.T) {
	ctx := t.Context()
	spec := rollout.Spec{ID: "agent-2", Target: rollout.Target{Name: "torpor-agent/2", Version: "2"}, Percents: []int{100}}
	ma, mb, third := rolloutRelays(t, single(t), spec, []rollout.Device{{ID: "did:key:zA", Minute: 1}, {ID: "did:key:zB", Minute: 2}, {ID: "did:key:zC", Minute: 3}})
	if n, err := ma.Forget(ctx, "did:key:zB", "forgotten for its silence"); n != 1 || err != nil {
		t.Fatalf("Forget through the first relay = %d, %v", n, err)
	}
	if n, err := ma.Carry(ctx, "did:key:zC", "did:key:zN"); n != 1 || err != nil {
		t.Fatalf("Carry through the first relay = %d, %v", n, err)
	}
	if _, ok, err := mb.Offer(ctx, "did:key:zB"); ok || err != nil {
		t.Errorf("the forgotten device offered through the second relay: %v, %v", ok, err)
	}
	if _, ok, err := mb.Offer(ctx, "did:key:zN"); !ok || err != nil {
		t.Errorf("the successor offered through the second relay: %v, %v; want the target", ok, err)
	}
	mb.Report(ctx, "did:key:zA", "2", rollout.Installed, "")
	if found, err := mb.Report(ctx, "did:key:zN", "2", rollout.Installed, ""); !found || err != nil {
		t.Errorf("the successor's report through the second relay = %v, %v; want counted", found, err)
	}
	r, err := third().Get(ctx, spec.ID)
	if err != nil || r.State != rollout.Done || r.Counts().Installed != 2 || r.Counts().Left != 1 || r.WaveOf("did:key:zC") >= 0 {
		t.Fatalf("through a third connection: %+v, %v; want done, 2 installed, zB left, zC carried to zN", r, err)
	}
}

// rolloutRelays starts spec over devices through the first of two
// connections to srv (two relays) and returns both relays' managers, and
// third, which closes them and returns the manager of a third
// connection, opened after they closed and closed when the test ends.
func rolloutRelays(t *testing.T, srv *jsserver.Server, spec rollout.Spec, devices []rollout.Device) (ma, mb *rollout.Manager, third func() *rollout.Manager) {
	t.Helper()
	c := clocktest.New(time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC))
	a, b := open(t, srv), open(t, srv)
	ma, mb = &rollout.Manager{Store: a.Rollouts(), Clock: c}, &rollout.Manager{Store: b.Rollouts(), Clock: c}
	if _, err := ma.Start(t.Context(), spec, devices); err != nil {
		t.Fatal(err)
	}
	return ma, mb, func() *rollout.Manager {
		a.Close()
		b.Close()
		cc := open(t, srv)
		t.Cleanup(func() { cc.Close() })
		return &rollout.Manager{Store: cc.Rollouts(), Clock: c}
	}
}
