package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/rollouts"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/transport/relay/rollout"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// rolloutReq is an operator request to a rollout endpoint as k.
func (h *harness) rolloutReq(tb testing.TB, method, path string, k *did.PrivateKey, body any) resp {
	tb.Helper()
	b, _ := json.Marshal(body)
	return h.asOperator(tb, method, path, k, bytes.NewReader(b))
}

// updateStatus is a device's signed status reporting an install outcome,
// in the install member as the A/B install writes it.
func updateStatus(t *testing.T, dev *did.PrivateKey, result, version, reason string) []byte {
	return signedStatus(t, dev, wire.PurposeStatus, wire.Status{Version: "1.3.0",
		Install: &wire.StatusInstall{Result: result, Version: version, Reason: reason, At: t0}})
}

// wakeForUpdate links dev, which is offered the rollout's 1.4.0 in its
// state-ok, then reports outcome o in its signed status.
func (h *harness) wakeForUpdate(t *testing.T, dev *did.PrivateKey, o string) {
	c := h.dial(t, dev)
	defer c.Close()
	a, err := c.Publish(context.Background(), h.state(t, dev, c.Hello(), "hourly_wake", deviceOpts{}))
	if err != nil || a.Offer == nil || a.Offer.Version != "1.4.0" || a.Offer.Rollout != "agent-1.4.0" {
		t.Fatalf("%s's state-ok: offer %+v, %v", dev.DID(), a.Offer, err)
	}
	s := h.state(t, dev, c.Hello(), "hourly_wake", deviceOpts{})
	s.Status = updateStatus(t, dev, o, "1.4.0", "trial: exited with status 2")
	if _, err := c.Publish(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// TestRolloutOverTheLink: an operator starts a rollout of 4 linked
// devices; each learns the target in its state-ok at its wake, reports
// its outcome in its signed status, and the relay pauses the rollout when
// 2 of 3 reported roll back; a device not yet reporting is pending; the
// operator resumes, then aborts, and no device is offered the target
// after. A stranger cannot start one.
func TestRolloutOverTheLink(t *testing.T) {
	op := didtest.Key(t, 7)
	st := rolloutStore(t)
	h := newHarness(t, func(c *Config) { c.Access.Operators = []did.DID{op.DID()}; c.Stores.Rollouts = st })
	var devs []*did.PrivateKey
	for i := range 4 {
		devs = append(devs, didtest.Key(t, byte(20+i)))
		h.publishOffline(t, devs[i], "hourly_wake", deviceOpts{})
	}
	start := operatorapi.RolloutStart{ID: "agent-1.4.0", Target: operatorapi.RolloutTarget{Name: "torpor-agent/1.4.0", Version: "1.4.0"},
		Percents: []int{100}, Criteria: operatorapi.RolloutCriteria{MinExecuted: 3, ThresholdPercent: 50}}
	if r := h.rolloutReq(t, "POST", operatorapi.RolloutsPath, devs[0], start); r.status != 403 {
		t.Fatalf("a device starting a rollout: %d %s", r.status, r.body)
	}
	if r := h.rolloutReq(t, "POST", operatorapi.RolloutsPath, op, start); r.status != 200 || r.json["state"] != "running" {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	outcomes := []string{"installed", "rolled-back", "rolled-back"}
	for i, o := range outcomes {
		h.wakeForUpdate(t, devs[i], o)
	}
	var got operatorapi.Rollout
	r := h.rolloutReq(t, "GET", operatorapi.RolloutsPath+"/agent-1.4.0", op, nil)
	json.Unmarshal(r.body, &got)
	if got.State != "paused" || got.Counts.Installed != 1 || got.Counts.RolledBack != 2 || got.Counts.Pending != 1 || len(got.Failures) != 2 {
		t.Fatalf("after 2 of 3 rolled back: %d %s", r.status, r.body)
	}
	c := h.dial(t, devs[3])
	if a, err := c.Publish(context.Background(), h.state(t, devs[3], c.Hello(), "hourly_wake", deviceOpts{})); err != nil || a.Offer != nil {
		t.Errorf("offer while paused: %+v, %v", a.Offer, err)
	}
	if r := h.rolloutReq(t, "POST", operatorapi.RolloutsPath+"/agent-1.4.0/resume", op, operatorapi.RolloutAction{}); r.status != 200 || r.json["state"] != "running" {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	if a, err := c.Publish(context.Background(), h.state(t, devs[3], c.Hello(), "hourly_wake", deviceOpts{})); err != nil || a.Offer == nil {
		t.Errorf("no offer after resume: %+v, %v", a.Offer, err)
	}
	if r := h.rolloutReq(t, "POST", operatorapi.RolloutsPath+"/agent-1.4.0/abort", op, operatorapi.RolloutAction{Reason: "bad build"}); r.status != 200 || r.json["state"] != "aborted" {
		t.Fatalf("abort: %d %s", r.status, r.body)
	}
	if a, err := c.Publish(context.Background(), h.state(t, devs[3], c.Hello(), "hourly_wake", deviceOpts{})); err != nil || a.Offer != nil {
		t.Errorf("offer after abort: %+v, %v", a.Offer, err)
	}
	if r := h.rolloutReq(t, "POST", operatorapi.RolloutsPath+"/agent-1.4.0/resume", op, operatorapi.RolloutAction{}); r.status != 409 {
		t.Errorf("resuming an aborted rollout: %d %s", r.status, r.body)
	}
}

// TestRolloutStartRefused: a bad rollout is refused with a reason and not
// stored; a relay without a rollouts store answers 404.
func TestRolloutStartRefused(t *testing.T) {
	op := didtest.Key(t, 7)
	st := rolloutStore(t)
	h := newHarness(t, func(c *Config) { c.Access.Operators = []did.DID{op.DID()}; c.Stores.Rollouts = st })
	dev := didtest.Key(t, 20)
	h.publishOffline(t, dev, "hourly_wake", deviceOpts{})
	target := operatorapi.RolloutTarget{Name: "t", Version: "1"}
	for name, body := range map[string]any{
		"unknown device": operatorapi.RolloutStart{ID: "r", Target: target, Devices: []string{didtest.Key(t, 30).DID().String()}},
		"percents":       operatorapi.RolloutStart{ID: "r", Target: target, Percents: []int{50}},
		"no target":      operatorapi.RolloutStart{ID: "r"},
		"unknown member": map[string]any{"id": "r", "target": target, "threshold": 5},
	} {
		if r := h.rolloutReq(t, "POST", operatorapi.RolloutsPath, op, body); r.status != 400 || r.json["message"] == "" {
			t.Errorf("%s: %d %s, want 400 with a reason", name, r.status, r.body)
		}
	}
	if ids, _ := st.List(context.Background()); len(ids) != 0 {
		t.Errorf("refused starts stored %v", ids)
	}
	h2 := newHarness(t, func(c *Config) { c.Access.Operators = []did.DID{op.DID()} })
	if r := h2.rolloutReq(t, "GET", operatorapi.RolloutsPath, op, nil); r.status != 404 {
		t.Errorf("without a store: %d %s", r.status, r.body)
	}
}

// TestStatusOutcomes: the outcomes are read from the install member (the
// A/B install: installed, rolled back, by version), from the update
// member's refusals (the TUF client: by target name), and from the version
// the device runs; an update check up to date, verified, held for the
// owner's confirmation or with its download paused (budget, fetch: the
// device stays pending), and bytes that are no status, are no report.
func TestStatusOutcomes(t *testing.T) {
	dev := didtest.Key(t, 20)
	rb := &wire.StatusInstall{Result: "rolled-back", Version: "1.4.0", From: "1.3.0", Reason: "hung", At: t0}
	tests := []struct {
		name string
		st   wire.Status
		want []outcome
	}{
		{"installed, running it", wire.Status{Version: "1.4.0", Install: &wire.StatusInstall{Result: "installed", Version: "1.4.0", At: t0}},
			[]outcome{{"1.4.0", "installed", ""}}},
		{"rolled back", wire.Status{Version: "1.3.0", Install: rb}, []outcome{{"1.4.0", "rolled-back", "hung"}, {"1.3.0", "installed", runningReason}}},
		{"refused", wire.Status{Version: "1.3.0", Update: &wire.StatusUpdate{Outcome: "refused", Target: "torpor-agent/7/linux-armv6", Version: 7, Reason: "freeze", Detail: "old timestamp"}},
			[]outcome{{"torpor-agent/7/linux-armv6", "refused", "freeze: old timestamp"}, {"1.3.0", "installed", runningReason}}},
		{"download paused by the budget", wire.Status{Version: "1.3.0", Update: &wire.StatusUpdate{Outcome: "refused", Target: "t", Version: 7, Reason: "budget", Detail: "t: 1048576 of 4165670 bytes; the rest at the next wake"}},
			[]outcome{{"1.3.0", "installed", runningReason}}},
		{"download cut off with its wake", wire.Status{Version: "1.3.0", Update: &wire.StatusUpdate{Outcome: "refused", Target: "t", Version: 7, Reason: "fetch", Detail: "fetch: t at byte 589824: context canceled"}},
			[]outcome{{"1.3.0", "installed", runningReason}}},
		{"verified, not installed", wire.Status{Version: "1.3.0", Update: &wire.StatusUpdate{Outcome: "verified", Target: "t", Version: 7}},
			[]outcome{{"1.3.0", "installed", runningReason}}},
		{"held for the owner's confirmation", wire.Status{Version: "1.3.0", Update: &wire.StatusUpdate{Outcome: wire.UpdateHeld, Target: "t", Version: 7,
			Reason: "needs-confirmation", Detail: "t version 7 waits for the owner's confirmation"}},
			[]outcome{{"1.3.0", "installed", runningReason}}},
		{"waiting for the running build's trial", wire.Status{Version: "1.3.0", Update: &wire.StatusUpdate{Outcome: wire.UpdateWaiting, Target: "t", Version: 7,
			Reason: "trial", Detail: "installing t waits for the trial of the running build to end"}},
			[]outcome{{"1.3.0", "installed", runningReason}}},
	}
	for _, tt := range tests {
		got := statusOutcomes(signedStatus(t, dev, wire.PurposeStatus, tt.st))
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: statusOutcomes = %+v, want %+v", tt.name, got, tt.want)
		}
	}
	if got := statusOutcomes([]byte("not a status")); got != nil {
		t.Errorf("bytes that are no status gave %+v", got)
	}
}

// TestConsoleRollouts: the console's view of a device's rollouts, read
// from a real rollouts file: the outcome it reported, pending while it
// has not, nothing from a rollout whose started waves do not hold it.
func TestConsoleRollouts(t *testing.T) {
	st := rolloutStore(t)
	m := rolloutManager(st, nil)
	ds := []rollout.Device{{ID: "did:key:zA", Minute: 1}, {ID: "did:key:zB", Minute: 2}, {ID: "did:key:zC", Minute: 3}}
	spec := rollout.Spec{ID: "r1", Target: rollout.Target{Name: "t", Version: "1.4.0"}, Percents: []int{66, 100}}
	if _, err := m.Start(context.Background(), spec, ds); err != nil {
		t.Fatal(err)
	}
	r, _ := m.Get(context.Background(), "r1")
	first := r.Waves[0].Devices
	m.Report(context.Background(), first[0], "1.4.0", rollout.RolledBack, "hung")
	c := consoleRollouts{m}
	for _, tt := range []struct {
		device, want string
	}{{first[0], "rolled-back hung"}, {first[1], "pending "}, {r.Waves[1].Devices[0], ""}} {
		u, err := c.DeviceUpdates(context.Background(), tt.device)
		got := ""
		if len(u) == 1 {
			got = u[0].Outcome + " " + u[0].Reason
		}
		if err != nil || got != tt.want || len(u) > 1 {
			t.Errorf("DeviceUpdates(%s) = %+v, %v; want %q", tt.device, u, err, tt.want)
		}
	}
	tspec := spec
	tspec.Tenant = "did:key:zTenant"
	if _, err := m.Start(context.Background(), tspec, ds); err != nil {
		t.Fatal(err)
	}
	if rs, err := c.Rollouts(context.Background()); err != nil || len(rs) != 1 || rs[0].Counts.RolledBack != 1 || rs[0].Counts.Waiting != 1 {
		t.Errorf("Rollouts = %+v, %v; want the relay's r1 alone, not the tenant's", rs, err)
	}
}

// TestRolloutsAreTheHostOperators: on a hosted relay, a tenant's operator
// (whom s.operator accepts for its tenant's devices) may neither start
// nor read one of the relay's own rollouts (its tenant's are under the
// tenant's path: rollouts_tenant_test.go); the relay's own operator may.
func TestRolloutsAreTheHostOperators(t *testing.T) {
	st := rolloutStore(t)
	th := newTenantHarness(t, tenancy.Quotas{}, func(c *Config) { c.Stores.Rollouts = st })
	dev := didtest.Key(t, 20)
	th.publishOffline(t, dev, "hourly_wake", deviceOpts{})
	start := operatorapi.RolloutStart{ID: "r1", Target: operatorapi.RolloutTarget{Name: "t", Version: "1"}, Percents: []int{100}}
	if r := th.rolloutReq(t, "POST", operatorapi.RolloutsPath, th.opA, start); r.status != 403 || r.json["error"] != "not_operator" {
		t.Errorf("a tenant's operator starting a rollout: %d %s", r.status, r.body)
	}
	if r := th.rolloutReq(t, "GET", operatorapi.RolloutsPath, th.opA, nil); r.status != 403 {
		t.Errorf("a tenant's operator listing rollouts: %d %s", r.status, r.body)
	}
	if r := th.rolloutReq(t, "POST", operatorapi.RolloutsPath, th.host, start); r.status != 200 {
		t.Errorf("the relay's operator starting a rollout: %d %s", r.status, r.body)
	}

	// A device of tenant a is a's owner's to update: the host may not name
	// it, and a rollout of every device leaves it out.
	tdev := didtest.Key(t, 21)
	if !th.enrolled(t, th.a, tdev) {
		t.Fatal("a's device was not enrolled")
	}
	named := start
	named.ID, named.Devices = "r2", []string{tdev.DID().String()}
	if r := th.rolloutReq(t, "POST", operatorapi.RolloutsPath, th.host, named); r.status != 403 || r.json["error"] != "not_tenant_operator" {
		t.Errorf("the host naming a tenant's device in a rollout: %d %s; want 403 not_tenant_operator", r.status, r.body)
	}
	every := start
	every.ID = "r3"
	r := th.rolloutReq(t, "POST", operatorapi.RolloutsPath, th.host, every)
	if counts, _ := r.json["counts"].(map[string]any); r.status != 200 || counts["devices"] != 1.0 {
		t.Errorf("the host's rollout of every device: %d %s; want the relay's one device, not a's", r.status, r.body)
	}
}

// rolloutStore is a rollouts store on bolt in a temporary directory,
// closed when the test ends.
func rolloutStore(t *testing.T) *rollouts.Bolt {
	t.Helper()
	st, err := rollouts.OpenBolt(filepath.Join(t.TempDir(), "rollouts.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// hostRollout is a harness whose relay keeps rollouts on bolt, its
// operator, and the relay's rollout agent-1.4.0 of n devices (keys 20 and
// up), started in one wave.
func hostRollout(t *testing.T, n int) (*harness, *did.PrivateKey, []*did.PrivateKey) {
	op := didtest.Key(t, 7)
	st := rolloutStore(t)
	h := newHarness(t, func(c *Config) { c.Access.Operators = []did.DID{op.DID()}; c.Stores.Rollouts = st })
	var devs []*did.PrivateKey
	for i := range n {
		devs = append(devs, didtest.Key(t, byte(20+i)))
		h.publishOffline(t, devs[i], "hourly_wake", deviceOpts{})
	}
	start := operatorapi.RolloutStart{ID: "agent-1.4.0", Target: operatorapi.RolloutTarget{Name: "torpor-agent/1.4.0", Version: "1.4.0"}, Percents: []int{100}}
	if r := h.rolloutReq(t, "POST", operatorapi.RolloutsPath, op, start); r.status != 200 || devicesOf(r) != float64(n) {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	return h, op, devs
}

// hostRolloutNow is the relay's rollout agent-1.4.0 as its operator op
// reads it.
func (h *harness) hostRolloutNow(t *testing.T, op *did.PrivateKey) operatorapi.Rollout {
	t.Helper()
	var got operatorapi.Rollout
	r := h.rolloutReq(t, "GET", operatorapi.RolloutsPath+"/agent-1.4.0", op, nil)
	if err := json.Unmarshal(r.body, &got); err != nil || r.status != 200 {
		t.Fatalf("the relay's rollout: %d %s", r.status, r.body)
	}
	return got
}

// TestHostRolloutForgottenLeaves: a device the relay forgets for its
// silence is left in the relay's own rollouts as in a tenant's, so that
// the rollout is done once the other device installed, and lists it with
// its reason.
func TestHostRolloutForgottenLeaves(t *testing.T) {
	h, op, devs := hostRollout(t, 2)
	if err := h.relay.forget(context.Background(), devs[1].DID().String(), 11, t0); err != nil {
		t.Fatal(err)
	}
	h.wakeForUpdate(t, devs[0], "installed")
	got := h.hostRolloutNow(t, op)
	if got.State != "done" || got.Counts.Installed != 1 || got.Counts.Left != 1 || got.Counts.Pending != 0 {
		t.Fatalf("the relay's rollout: %+v; want done, 1 installed, 1 left", got)
	}
	if len(got.Failures) != 1 || got.Failures[0].Device != devs[1].DID().String() || got.Failures[0].Outcome != "left" || got.Failures[0].Reason != "forgotten for its silence" {
		t.Errorf("the relay's rollout lists %+v; want %s left: forgotten for its silence", got.Failures, devs[1].DID())
	}
}

// TestHostRolloutRetiredCarries: when a device retires its key, its
// successor (the same device under a new key) takes its place in the
// relay's rollout: it is offered the build, its install is counted, and
// the rollout is done without an operator.
func TestHostRolloutRetiredCarries(t *testing.T) {
	h, op, devs := hostRollout(t, 2)
	next := didtest.Key(t, 75)
	c := h.dial(t, devs[1])
	st := h.state(t, devs[1], c.Hello(), "hourly_wake", deviceOpts{})
	st.Retirement = retirement(t, devs[1], devs[1].DID(), next.DID(), wire.PurposeRetirement)
	if _, err := c.Publish(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	c.Close()
	h.wakeForUpdate(t, devs[0], "installed")
	h.wakeForUpdate(t, next, "installed")
	got := h.hostRolloutNow(t, op)
	if got.State != "done" || got.Counts.Devices != 2 || got.Counts.Installed != 2 || got.Counts.Left != 0 {
		t.Fatalf("the relay's rollout: %+v; want done, 2 installed", got)
	}
}
