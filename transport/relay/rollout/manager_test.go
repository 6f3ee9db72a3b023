package rollout_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/store/rollouts"
	"github.com/torpor-dev/torpor/transport/relay/rollout"
)

func devices(n int) []rollout.Device {
	var ds []rollout.Device
	for i := range n {
		ds = append(ds, rollout.Device{ID: fmt.Sprintf("did:key:z%03d", i), Minute: i % 60})
	}
	return ds
}

var start = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

func spec() rollout.Spec {
	return rollout.Spec{ID: "agent-1.4.0", Target: rollout.Target{Name: "torpor-agent/linux-armv6/1.4.0", Version: "1.4.0"},
		Percents: []int{10, 100}, Criteria: rollout.Criteria{MinExecuted: 3, ThresholdPercent: 50}}
}

func openBolt(t *testing.T, path string) *rollouts.Bolt {
	t.Helper()
	s, err := rollouts.OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newManager is a Manager on a new bolt file, closed when the test ends,
// and a fake clock at start.
func newManager(t *testing.T) *rollout.Manager {
	t.Helper()
	s := openBolt(t, filepath.Join(t.TempDir(), "rollouts.db"))
	t.Cleanup(func() { s.Close() })
	return &rollout.Manager{Store: s, Clock: clocktest.New(start)}
}

// TestManagerSurvivesRestart: a rollout started, offered and reported
// through one Manager on a bbolt file is found as it was by a Manager on
// the file opened again (a relay restarted), which moves it on.
func TestManagerSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rollouts.db")
	c := clocktest.New(start)
	s := openBolt(t, path)
	m := &rollout.Manager{Store: s, Clock: c}
	r, err := m.Start(t.Context(), spec(), devices(20))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Start(t.Context(), spec(), devices(20)); !errors.Is(err, rollout.ErrExists) {
		t.Errorf("second Start: %v, want ErrExists", err)
	}
	first := r.Waves[0].Devices
	tg, ok, err := m.Offer(t.Context(), first[0])
	if err != nil || !ok || tg.Version != "1.4.0" {
		t.Fatalf("Offer(%s) = %+v, %v, %v", first[0], tg, ok, err)
	}
	if _, ok, _ := m.Offer(t.Context(), r.Waves[1].Devices[0]); ok {
		t.Error("a device of wave 1 was offered during wave 0")
	}
	if found, err := m.Report(t.Context(), first[0], "1.4.0", rollout.Installed, ""); !found || err != nil {
		t.Fatalf("Report = %v, %v", found, err)
	}
	if found, _ := m.Report(t.Context(), first[1], "1.3.9", rollout.RolledBack, "x"); found {
		t.Error("a report of another version was counted")
	}
	s.Close()

	s = openBolt(t, path)
	defer s.Close()
	m = &rollout.Manager{Store: s, Clock: c}
	got, err := m.Get(t.Context(), "agent-1.4.0")
	if err != nil || got.Results[first[0]].Outcome != rollout.Installed || got.Counts().Pending != 1 {
		t.Fatalf("after reopening: %+v, %v", got, err)
	}
	c.Advance(time.Hour)
	if _, ok, _ := m.Offer(t.Context(), r.Waves[1].Devices[0]); !ok {
		t.Error("after WaveTime, a device of wave 1 is not offered")
	}
	if got, _ := m.Get(t.Context(), "agent-1.4.0"); got.Wave != 1 || !got.Waves[1].Started.Equal(c.Now()) {
		t.Errorf("wave %d started %v; want wave 1 at %v", got.Wave, got.Waves[1].Started, c.Now())
	}
}

// TestManagersShareOneStore: 4 Managers (as 4 relays) record 20 devices'
// reports concurrently; none is lost, the breach pauses the rollout, and
// operator changes go through any of them.
func TestManagersShareOneStore(t *testing.T) {
	s := openBolt(t, filepath.Join(t.TempDir(), "rollouts.db"))
	defer s.Close()
	c := clocktest.New(start)
	var ms []*rollout.Manager
	for range 4 {
		ms = append(ms, &rollout.Manager{Store: s, Clock: c})
	}
	sp := spec()
	sp.Percents, sp.Criteria = []int{100}, rollout.Criteria{}
	if _, err := ms[0].Start(t.Context(), sp, devices(20)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i, d := range devices(20) {
		wg.Go(func() {
			if _, err := ms[i%4].Report(t.Context(), d.ID, "1.4.0", rollout.Installed, ""); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	r, err := ms[3].Get(t.Context(), sp.ID)
	if err != nil || r.Counts().Installed != 20 || r.State != rollout.Done {
		t.Fatalf("after 20 concurrent reports: %+v, %v", r.Counts(), err)
	}
	if _, err := ms[1].Pause(t.Context(), sp.ID, "x"); !errors.Is(err, rollout.ErrState) {
		t.Errorf("pausing a done rollout: %v, want ErrState", err)
	}
	if _, err := ms[1].Abort(t.Context(), "nope", "x"); !errors.Is(err, rollout.ErrNotFound) {
		t.Errorf("aborting an unknown rollout: %v, want ErrNotFound", err)
	}
}

// TestManagerPauseResumeAbort: an operator pause, resume and abort are
// stored; an abort stops offers.
func TestManagerPauseResumeAbort(t *testing.T) {
	m := newManager(t)
	r, err := m.Start(t.Context(), spec(), devices(10))
	if err != nil {
		t.Fatal(err)
	}
	d := r.Waves[0].Devices[0]
	if r, err := m.Pause(t.Context(), r.ID, "look first"); err != nil || r.State != rollout.Paused || r.Reason != "look first" {
		t.Fatalf("Pause = %+v, %v", r, err)
	}
	if _, ok, _ := m.Offer(t.Context(), d); ok {
		t.Error("offered while paused")
	}
	if _, err := m.Resume(t.Context(), r.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := m.Offer(t.Context(), d); !ok {
		t.Error("not offered after resume")
	}
	if _, err := m.Abort(t.Context(), r.ID, "bad build"); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Get(t.Context(), r.ID); got.State != rollout.Aborted || got.Reason != "bad build" {
		t.Errorf("after abort: %s %q", got.State, got.Reason)
	}
	if _, ok, _ := m.Offer(t.Context(), d); ok {
		t.Error("offered after abort")
	}
}

// TestOfferSeesOtherRelays: a Manager that decoded a rollout for an
// offer sees another Manager's (another relay's) pause and resume at its
// next offer: its decoded record is kept per revision only.
func TestOfferSeesOtherRelays(t *testing.T) {
	s := openBolt(t, filepath.Join(t.TempDir(), "rollouts.db"))
	defer s.Close()
	c := clocktest.New(start)
	a, b := &rollout.Manager{Store: s, Clock: c}, &rollout.Manager{Store: s, Clock: c}
	r, err := a.Start(t.Context(), spec(), devices(10))
	if err != nil {
		t.Fatal(err)
	}
	d := r.Waves[0].Devices[0]
	for i, step := range []struct {
		change func() error
		offer  bool
	}{
		{func() error { return nil }, true},
		{func() error { _, err := b.Pause(t.Context(), r.ID, "x"); return err }, false},
		{func() error { _, err := b.Resume(t.Context(), r.ID); return err }, true},
		{func() error { _, err := b.Report(t.Context(), d, "1.4.0", rollout.Installed, ""); return err }, false},
	} {
		if err := step.change(); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := a.Offer(t.Context(), d); err != nil || ok != step.offer {
			t.Errorf("step %d: Offer = %v, %v; want %v", i, ok, err, step.offer)
		}
	}
}

// TestReportByTargetName: a refusal reported by the TUF target's name (the
// device's update check names no build version) is recorded as the
// version's would be; a name of another target is not.
func TestReportByTargetName(t *testing.T) {
	m := newManager(t)
	r, err := m.Start(t.Context(), spec(), devices(10))
	if err != nil {
		t.Fatal(err)
	}
	d := r.Waves[0].Devices[0]
	if found, err := m.Report(t.Context(), d, "torpor-agent/linux-armv6/1.3.0", rollout.Refused, "x"); found || err != nil {
		t.Errorf("another target's refusal: %v, %v", found, err)
	}
	if found, err := m.Report(t.Context(), d, spec().Target.Name, rollout.Refused, "freeze"); !found || err != nil {
		t.Fatalf("Report by name = %v, %v", found, err)
	}
	if got, _ := m.Get(t.Context(), r.ID); got.Results[d].Outcome != rollout.Refused {
		t.Errorf("result %+v", got.Results[d])
	}
}

// TestOfferIDOfTenants: of two rollouts that would offer a device a
// target, a tenant's whose tenant inTenant refuses is passed over for the
// next; one it accepts is offered under its own id; inTenant's error is
// returned.
func TestOfferIDOfTenants(t *testing.T) {
	m := newManager(t)
	ds := []rollout.Device{{ID: "did:key:zD", Minute: 1}}
	a, host := spec(), spec()
	a.Tenant, a.ID, a.Percents, host.ID, host.Percents = "did:key:zA", "a-1.4.0", []int{100}, "z-1.4.0", []int{100}
	for _, sp := range []rollout.Spec{a, host} {
		if _, err := m.Start(t.Context(), sp, ds); err != nil {
			t.Fatal(err)
		}
	}
	fail := errors.New("ledger down")
	for _, tt := range []struct {
		name   string
		tenant string
		err    error
		want   string
	}{
		{"in tenant a", "did:key:zA", nil, "a-1.4.0"},
		{"in another tenant", "did:key:zB", nil, "z-1.4.0"},
		{"in none", "", nil, "z-1.4.0"},
		{"ledger failed", "", fail, ""},
	} {
		in := func(tenant string) (bool, error) { return tenant == "" || tenant == tt.tenant, tt.err }
		id, _, ok, err := m.OfferIDOf(t.Context(), "did:key:zD", in)
		if id != tt.want || ok != (tt.want != "") || !errors.Is(err, tt.err) {
			t.Errorf("%s: OfferIDOf = %q, %v, %v; want %q", tt.name, id, ok, err, tt.want)
		}
	}
}

// TestLeaveEndsTenantRollout: a device that leaves the tenant of a
// tenant's rollout, forgotten by the relay (Manager.Forget, which leaves
// the relay's own rollouts too) or found out of the tenant at a wake
// (OfferIDOf), is left: offered nothing more, its later reports not
// counted, no failure for the criteria, and the rollout ends without it.
func TestLeaveEndsTenantRollout(t *testing.T) {
	s := openBolt(t, filepath.Join(t.TempDir(), "rollouts.db"))
	defer s.Close()
	c := clocktest.New(start)
	m, other := &rollout.Manager{Store: s, Clock: c}, &rollout.Manager{Store: s, Clock: c}
	ds := devices(4)
	tsp, host := spec(), spec()
	tsp.Tenant, tsp.Percents, tsp.Criteria = "did:key:zOwner", []int{50, 100}, rollout.Criteria{MinExecuted: 1, ThresholdPercent: 50}
	host.ID, host.Percents = "host-1.4.0", []int{100}
	r, err := m.Start(t.Context(), tsp, ds)
	if err != nil {
		t.Fatal(err)
	}
	gone, woke := r.Waves[0].Devices[0], r.Waves[1].Devices[0] // a device of each wave
	if _, err := m.Start(t.Context(), host, []rollout.Device{{ID: gone}}); err != nil {
		t.Fatal(err)
	}
	if n, err := other.Forget(t.Context(), gone, "forgotten for its silence"); n != 2 || err != nil {
		t.Fatalf("Forget(%s) = %d, %v; want the tenant's and the relay's rollouts changed", gone, n, err)
	}
	if n, err := other.Forget(t.Context(), gone, "again"); n != 0 || err != nil {
		t.Errorf("a second Forget = %d, %v; want no change", n, err)
	}
	inTenant := func(tenant string) (bool, error) { return tenant == "", nil } // it left the tenant
	if id, _, ok, err := m.OfferIDOf(t.Context(), gone, nil); err != nil || ok {
		t.Errorf("OfferIDOf(%s) after it was forgotten = %q, %v, %v; want nothing", gone, id, ok, err)
	}
	if found, err := m.Report(t.Context(), gone, "1.4.0", rollout.RolledBack, "trial"); err != nil || found {
		t.Errorf("Report of the forgotten device = %v, %v; want not counted", found, err)
	}
	for _, d := range r.Waves[0].Devices[1:] {
		m.Report(t.Context(), d, "1.4.0", rollout.Installed, "")
	}
	if id, _, ok, err := m.OfferIDOf(t.Context(), woke, inTenant); err != nil || ok {
		t.Errorf("OfferIDOf(%s) out of the tenant = %q, %v, %v; want nothing", woke, id, ok, err)
	}
	for _, d := range r.Waves[1].Devices[1:] {
		m.Report(t.Context(), d, "1.4.0", rollout.Installed, "")
	}
	got, err := other.Get(t.Context(), r.Key())
	if err != nil || got.State != rollout.Done || got.Counts().Left != 2 || got.Counts().Installed != 2 || got.Counts().Pending != 0 {
		t.Fatalf("the tenant's rollout = %s %+v, %v; want done, 2 installed, 2 left", got.State, got.Counts(), err)
	}
	if res := got.Results[gone]; res.Outcome != rollout.Left || res.Reason != "forgotten for its silence" {
		t.Errorf("the forgotten device's result = %+v; want left, forgotten for its silence", res)
	}
	if res := got.Results[woke]; res.Outcome != rollout.Left {
		t.Errorf("the device found out of the tenant at its wake: %+v; want left", res)
	}
}

// TestLeaveTenantsTakesOutTheRemoved: LeaveTenants leaves, in a tenant's
// rollout, the devices without a report the tenant no longer holds, in
// any wave, started or not; a device that reported keeps its outcome, the
// relay's own rollout and a tenant's aborted one are not changed, a
// second pass changes nothing, and the members' error is returned.
func TestLeaveTenantsTakesOutTheRemoved(t *testing.T) {
	s := openBolt(t, filepath.Join(t.TempDir(), "rollouts.db"))
	defer s.Close()
	m := &rollout.Manager{Store: s, Clock: clocktest.New(start)}
	tsp, host, aborted := spec(), spec(), spec()
	tsp.Tenant, tsp.Percents = "did:key:zOwner", []int{50, 100}
	host.ID, aborted.ID, aborted.Tenant = "host-1.4.0", "old-1.4.0", tsp.Tenant
	ds := devices(4)
	r, err := m.Start(t.Context(), tsp, ds)
	for _, sp := range []rollout.Spec{host, aborted} {
		if _, err2 := m.Start(t.Context(), sp, ds); err == nil {
			err = err2
		}
	}
	if _, err2 := m.Abort(t.Context(), rollouts.Key(aborted.Tenant, aborted.ID), "stop"); err == nil {
		err = err2
	}
	if err != nil {
		t.Fatal(err)
	}
	reported, waiting, stays := r.Waves[0].Devices[0], r.Waves[1].Devices[0], r.Waves[0].Devices[1]
	m.Report(t.Context(), reported, "1.4.0", rollout.Installed, "")
	members := func(tenant string) (func(string) bool, error) {
		if tenant != tsp.Tenant {
			t.Errorf("members asked of tenant %q", tenant)
		}
		return func(d string) bool { return d == stays }, nil
	}
	if n, err := m.LeaveTenants(t.Context(), members, "taken out"); n != 2 || err != nil {
		t.Fatalf("LeaveTenants = %d, %v; want the 2 devices without a report out of the tenant", n, err)
	}
	if n, err := m.LeaveTenants(t.Context(), members, "again"); n != 0 || err != nil {
		t.Errorf("a second LeaveTenants = %d, %v; want no change", n, err)
	}
	fail := errors.New("ledger down")
	if _, err := m.LeaveTenants(t.Context(), func(string) (func(string) bool, error) { return nil, fail }, "x"); !errors.Is(err, fail) {
		t.Errorf("LeaveTenants with a failing ledger = %v; want %v", err, fail)
	}
	got, err := m.Get(t.Context(), r.Key())
	if err != nil || got.Results[reported].Outcome != rollout.Installed || got.Results[waiting].Outcome != rollout.Left || got.Results[waiting].Reason != "taken out" {
		t.Fatalf("the tenant's rollout: %+v, %v; want %s installed, %s left", got.Results, err, reported, waiting)
	}
	if _, ok := got.Results[stays]; ok || got.Counts().Left != 2 {
		t.Errorf("the tenant's rollout counts %+v, %s's result %+v; want 2 left, %s pending", got.Counts(), stays, got.Results[stays], stays)
	}
	for _, id := range []string{host.ID, rollouts.Key(aborted.Tenant, aborted.ID)} {
		if o, err := m.Get(t.Context(), id); err != nil || o.Counts().Left != 0 {
			t.Errorf("rollout %s: %+v, %v; want none left", id, o.Counts(), err)
		}
	}
}

// TestForgetEndsHostRollout: a device the relay forgets for its silence
// is left in the relay's own rollouts as in its tenant's (Manager.Forget):
// offered nothing more, its later reports not counted, no failure for the
// criteria, counted as reported for the waves, so that the rollout ends
// without it. A device that reported keeps its outcome.
func TestForgetEndsHostRollout(t *testing.T) {
	m := newManager(t)
	sp := spec()
	sp.Percents, sp.Criteria = []int{50, 100}, rollout.Criteria{MinExecuted: 1, ThresholdPercent: 50}
	r, err := m.Start(t.Context(), sp, devices(4))
	if err != nil {
		t.Fatal(err)
	}
	gone, done := r.Waves[0].Devices[0], r.Waves[0].Devices[1]
	m.Report(t.Context(), done, "1.4.0", rollout.Installed, "")
	if n, err := m.Forget(t.Context(), done, "forgotten for its silence"); n != 0 || err != nil {
		t.Errorf("Forget(%s) of a device that reported = %d, %v; want no change", done, n, err)
	}
	if n, err := m.Forget(t.Context(), gone, "forgotten for its silence"); n != 1 || err != nil {
		t.Fatalf("Forget(%s) = %d, %v; want the relay's rollout changed", gone, n, err)
	}
	checkOut(t, m, gone, "the forgotten device", rollout.RolledBack)
	got, err := m.Get(t.Context(), r.Key())
	if err != nil || got.Wave != 1 || got.State != rollout.Running {
		t.Fatalf("after the first wave's devices reported or left: wave %d %s, %v; want the second wave running", got.Wave, got.State, err)
	}
	for _, d := range r.Waves[1].Devices {
		m.Report(t.Context(), d, "1.4.0", rollout.Installed, "")
	}
	got, err = m.Get(t.Context(), r.Key())
	if err != nil || got.State != rollout.Done || got.Counts().Left != 1 || got.Counts().Installed != 3 || got.Counts().Pending != 0 {
		t.Fatalf("the relay's rollout = %s %+v, %v; want done, 3 installed, 1 left", got.State, got.Counts(), err)
	}
	if res := got.Results[gone]; res.Outcome != rollout.Left || res.Reason != "forgotten for its silence" {
		t.Errorf("the forgotten device's result = %+v; want left, forgotten for its silence", res)
	}
}

// TestCarryToSuccessor: the successor of a retired key takes its
// predecessor's place in the relay's own rollouts and in a tenant's
// (Manager.Carry): it is offered the target and its report counted, the
// predecessor is neither; a result the predecessor reported moves with
// it. A successor already in a rollout has its own place there, and the
// predecessor leaves.
func TestCarryToSuccessor(t *testing.T) {
	m := newManager(t)
	ds := devices(3)
	host, tsp, both := spec(), spec(), spec()
	host.Percents = []int{100}
	tsp.Tenant, tsp.Percents = "did:key:zOwner", []int{100}
	both.ID, both.Percents = "both", []int{100}
	old, reported, next := ds[0].ID, ds[1].ID, "did:key:zNext"
	for _, s := range []rollout.Spec{host, tsp} {
		if _, err := m.Start(t.Context(), s, ds); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Start(t.Context(), both, append(devices(1), rollout.Device{ID: next})); err != nil {
		t.Fatal(err)
	}
	m.Report(t.Context(), reported, "1.4.0", rollout.RolledBack, "trial")
	if n, err := m.Carry(t.Context(), old, next); n != 3 || err != nil {
		t.Fatalf("Carry(%s, %s) = %d, %v; want 3 rollouts changed", old, next, n, err)
	}
	if n, err := m.Carry(t.Context(), reported, "did:key:zNext2"); n != 2 || err != nil {
		t.Fatalf("Carry(%s) = %d, %v; want 2 rollouts changed", reported, n, err)
	}
	checkOut(t, m, old, "the retired key", rollout.Installed)
	if _, ok, err := m.Offer(t.Context(), next); !ok || err != nil {
		t.Errorf("Offer(%s) of the successor = %v, %v; want the target", next, ok, err)
	}
	if found, err := m.Report(t.Context(), next, "1.4.0", rollout.Installed, ""); !found || err != nil {
		t.Errorf("Report of the successor = %v, %v; want counted", found, err)
	}
	for _, key := range []string{host.ID, rollouts.Key(tsp.Tenant, tsp.ID)} {
		got, err := m.Get(t.Context(), key)
		if err != nil || got.WaveOf(old) >= 0 || got.Results[next].Outcome != rollout.Installed || got.Results["did:key:zNext2"].Outcome != rollout.RolledBack || got.Counts().Devices != 3 {
			t.Errorf("rollout %s = %+v, %v; want %s in %s's place, installed, and the rolled-back result carried", key, got, err, next, old)
		}
	}
	got, err := m.Get(t.Context(), both.ID)
	if err != nil || got.Results[old].Outcome != rollout.Left || got.Results[next].Outcome != rollout.Installed {
		t.Errorf("the rollout that held both keys = %+v, %v; want %s left, %s installed", got.Results, err, old, next)
	}
}

// checkOut checks that m offers dev, which what names, nothing and does
// not count its report of outcome.
func checkOut(t *testing.T, m *rollout.Manager, dev, what string, outcome rollout.Outcome) {
	t.Helper()
	if _, ok, err := m.Offer(t.Context(), dev); ok || err != nil {
		t.Errorf("Offer(%s) of %s = %v, %v; want nothing", dev, what, ok, err)
	}
	if found, err := m.Report(t.Context(), dev, "1.4.0", outcome, ""); found || err != nil {
		t.Errorf("Report of %s = %v, %v; want not counted", what, found, err)
	}
}
