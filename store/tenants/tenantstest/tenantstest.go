// Package tenantstest is the contract every store/tenants.Store keeps,
// run against each engine's files or servers by its own tests: the bbolt
// Ledger (store/tenants) and JetStream's (store/jsstore) on a real
// nats-server.
package tenantstest

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/tenants"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// Open opens a Store over the test's data on clk: the first call in a
// test opens fresh data; a later one opens another Store over the same
// data (a second relay on the same cluster), or the same file again once
// the first Store is closed.
type Open func(t testing.TB, clk clock.Clock) tenants.Store

// Run runs the contract against stores opened by open. relays is how
// many Stores the races spread their calls over (1 for a file only one
// process opens; more for a store that relays share).
func Run(t *testing.T, open Open, relays int) {
	wrap := func(fn func(*testing.T, suite)) func(*testing.T) {
		return func(t *testing.T) { fn(t, suite{open, max(relays, 1)}) }
	}
	t.Run("DevicesQuotaExactUnderConcurrentEnrolments", wrap(devicesQuotaExactUnderConcurrentEnrolments))
	t.Run("QueuedBytesQuotaExactUnderConcurrentSenders", wrap(queuedBytesQuotaExactUnderConcurrentSenders))
	t.Run("KeyPackageQuota", wrap(keyPackageQuota))
	t.Run("RequestsPerSecondExact", wrap(requestsPerSecondExact))
	t.Run("BadRequests", wrap(badRequests))
	t.Run("KeepsEverythingAcrossReopen", wrap(ledgerKeepsEverythingAcrossReopen))
	t.Run("CheckCountsRefusals", wrap(checkCountsRefusals))
	t.Run("UpdateBytesQuotaKeptAndChecked", wrap(updateBytesQuotaKeptAndChecked))
	t.Run("MoveKeepsTheDeviceCount", wrap(moveKeepsTheDeviceCount))
	t.Run("UsageRecordByteHoursAcrossHours", wrap(usageRecordByteHoursAcrossHours))
	t.Run("UsageRecordVerifiesAndAChangedOneDoesNot", wrap(usageRecordVerifiesAndAChangedOneDoesNot))
	t.Run("ObserveAccruesByteHours", wrap(observeAccruesByteHours))
	t.Run("UsageRecordCarriesUpdateBytes", wrap(usageRecordCarriesUpdateBytes))
	t.Run("ByteHoursQuotaReachedExactly", wrap(byteHoursQuotaReachedExactly))
	t.Run("ByteHoursExactUnderConcurrentSenders", wrap(byteHoursExactUnderConcurrentSenders))
	t.Run("OnlyTheOwnersOperatorsMayAct", wrap(onlyTheOwnersOperatorsMayAct))
	t.Run("OperatorListRefusals", wrap(operatorListRefusals))
	t.Run("LockIsOneHolderAtATime", wrap(lockIsOneHolderAtATime))
	t.Run("OneTenantPerDeviceUnderRace", wrap(oneTenantPerDeviceUnderRace))
}

// suite is what each check runs with.
type suite struct {
	open   Open
	relays int
}

var t0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

type fixture struct {
	l    tenants.Store
	ls   []tenants.Store
	clk  *clocktest.Clock
	a, b *did.PrivateKey
}

// at is the Store the i-th racer calls: the races spread over the
// relays.
func (f *fixture) at(i int) tenants.Store { return f.ls[i%len(f.ls)] }

// newFixture opens the stores with tenants a (quotas qa) and b (no
// limits).
func newFixture(t *testing.T, s suite, qa tenants.Quotas) *fixture {
	t.Helper()
	f := &fixture{clk: clocktest.New(t0), a: didtest.Key(t, 1), b: didtest.Key(t, 2)}
	f.l = s.open(t, f.clk)
	f.ls = []tenants.Store{f.l}
	for range s.relays - 1 {
		f.ls = append(f.ls, s.open(t, f.clk))
	}
	if err := f.l.Put(f.a.DID(), qa); err != nil {
		t.Fatal(err)
	}
	if err := f.l.Put(f.b.DID(), tenants.Quotas{}); err != nil {
		t.Fatal(err)
	}
	return f
}

// race runs n goroutines of fn at once and returns how many succeeded and
// the refusals, which must all be *QuotaErrors.
func race(t *testing.T, n int, fn func(i int) error) (ok int64, refused []*tenants.QuotaError) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := fn(i)
			var qe *tenants.QuotaError
			switch {
			case err == nil:
				atomic.AddInt64(&ok, 1)
			case errors.As(err, &qe):
				mu.Lock()
				refused = append(refused, qe)
				mu.Unlock()
			default:
				t.Errorf("call %d: %v", i, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	return ok, refused
}

func devicesQuotaExactUnderConcurrentEnrolments(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{Devices: 10})
	ok, refused := race(t, 64, func(i int) error { return f.at(i).Enrol(f.a.DID(), didtest.Key(t, byte(100+i)).DID()) })
	if ok != 10 || len(refused) != 54 {
		t.Fatalf("%d enrolled, %d refused; want 10 and 54", ok, len(refused))
	}
	for _, qe := range refused {
		if qe.Quota != tenants.QuotaDevices || qe.Status() != http.StatusInsufficientStorage || qe.Tenant != f.a.DID() || qe.Limit != 10 {
			t.Fatalf("refusal %+v", qe)
		}
	}
	devs, err := f.l.Devices(f.a.DID())
	if err != nil || len(devs) != 10 {
		t.Fatalf("tenant a has %d devices (%v), want 10", len(devs), err)
	}
	// Tenant b sees nothing of a's quota.
	if err := f.l.Enrol(f.b.DID(), didtest.Key(t, 200).DID()); err != nil {
		t.Fatalf("tenant b: %v", err)
	}
	if info, _ := f.l.Tenant(f.a.DID()); info.Held.Devices != 10 {
		t.Fatalf("a holds %d devices", info.Held.Devices)
	}
}

func queuedBytesQuotaExactUnderConcurrentSenders(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{QueuedBytes: 1000})
	ok, refused := race(t, 100, func(i int) error { return f.at(i).Reserve(f.a.DID(), tenants.QuotaQueuedBytes, 37) })
	if ok != 27 || len(refused) != 73 {
		t.Fatalf("%d reserved, %d refused; want 27 and 73 (1000/37)", ok, len(refused))
	}
	info, err := f.l.Tenant(f.a.DID())
	if err != nil || info.Held.QueuedBytes != 27*37 {
		t.Fatalf("a holds %d bytes (%v), want %d", info.Held.QueuedBytes, err, 27*37)
	}
	if qe := refused[0]; qe.Quota != tenants.QuotaQueuedBytes || qe.Want != 37 || qe.Used+qe.Want <= qe.Limit {
		t.Fatalf("refusal %+v", qe)
	}
	if err := f.l.Reserve(f.b.DID(), tenants.QuotaQueuedBytes, 1<<20); err != nil {
		t.Fatalf("tenant b: %v", err)
	}
	// What is released can be spent again, exactly.
	if err := f.l.Release(f.a.DID(), tenants.QuotaQueuedBytes, 37); err != nil {
		t.Fatal(err)
	}
	ok, _ = race(t, 10, func(i int) error { return f.at(i).Reserve(f.a.DID(), tenants.QuotaQueuedBytes, 37) })
	if ok != 1 {
		t.Fatalf("%d reservations after one release, want 1", ok)
	}
}

func keyPackageQuota(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{KeyPackageBytes: 4096})
	if err := f.l.Reserve(f.a.DID(), tenants.QuotaKeyPackageBytes, 4096); err != nil {
		t.Fatal(err)
	}
	var qe *tenants.QuotaError
	if err := f.l.Reserve(f.a.DID(), tenants.QuotaKeyPackageBytes, 1); !errors.As(err, &qe) || qe.Quota != tenants.QuotaKeyPackageBytes {
		t.Fatalf("past the quota: %v", err)
	}
	// Queued bytes are a quota of their own.
	if err := f.l.Reserve(f.a.DID(), tenants.QuotaQueuedBytes, 1<<20); err != nil {
		t.Fatal(err)
	}
}

func requestsPerSecondExact(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{RequestsPerSecond: 5})
	ok, refused := race(t, 50, func(i int) error { return f.at(i).Allow(f.a.DID()) })
	if ok != 5 || len(refused) != 45 {
		t.Fatalf("%d allowed, %d refused in one second; want 5 and 45", ok, len(refused))
	}
	if refused[0].Status() != http.StatusTooManyRequests || refused[0].Quota != tenants.QuotaRequests {
		t.Fatalf("refusal %+v", refused[0])
	}
	if ok, _ := race(t, 50, func(i int) error { return f.at(i).Allow(f.b.DID()) }); ok != 50 {
		t.Fatalf("tenant b: %d of 50 allowed", ok)
	}
	f.clk.Advance(time.Second)
	if ok, _ := race(t, 50, func(i int) error { return f.at(i).Allow(f.a.DID()) }); ok != 5 {
		t.Fatalf("next second: %d allowed, want 5", ok)
	}
}

func badRequests(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{})
	nobody := didtest.Key(t, 9).DID()
	for name, err := range map[string]error{
		"unknown tenant":   f.l.Reserve(nobody, tenants.QuotaQueuedBytes, 1),
		"enrol in unknown": f.l.Enrol(nobody, didtest.Key(t, 10).DID()),
		"rate of unknown":  f.l.Allow(nobody),
	} {
		if !errors.Is(err, tenants.ErrNoTenant) {
			t.Errorf("%s: %v, want tenants.ErrNoTenant", name, err)
		}
	}
	if err := f.l.Release(f.a.DID(), tenants.QuotaQueuedBytes, 1); !errors.Is(err, tenants.ErrUnderflow) {
		t.Errorf("release of nothing: %v", err)
	}
	if err := f.l.Reserve(f.a.DID(), tenants.QuotaDevices, 1); err == nil {
		t.Error("devices reserved as bytes")
	}
	if err := f.l.Reserve(f.a.DID(), tenants.QuotaQueuedBytes, -1); err == nil {
		t.Error("negative reservation")
	}
	if err := f.l.Put(f.a.DID(), tenants.Quotas{Devices: -1}); err == nil {
		t.Error("negative quota")
	}
	dev := didtest.Key(t, 11).DID()
	if err := f.l.Enrol(f.a.DID(), dev); err != nil {
		t.Fatal(err)
	}
	if err := f.l.Enrol(f.b.DID(), dev); !errors.Is(err, tenants.ErrOtherTenant) {
		t.Errorf("a's device enrolled in b: %v", err)
	}
	if err := f.l.Enrol(f.a.DID(), dev); err != nil {
		t.Errorf("enrolled twice: %v", err)
	}
	if err := f.l.Forget(dev); err != nil {
		t.Fatal(err)
	}
	if err := f.l.Enrol(f.b.DID(), dev); err != nil {
		t.Errorf("forgotten device into b: %v", err)
	}
}

func ledgerKeepsEverythingAcrossReopen(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{Devices: 3, RequestsPerSecond: 1})
	if err := f.l.Enrol(f.a.DID(), didtest.Key(t, 20).DID()); err != nil {
		t.Fatal(err)
	}
	if err := f.l.Reserve(f.a.DID(), tenants.QuotaQueuedBytes, 500); err != nil {
		t.Fatal(err)
	}
	f.l.Allow(f.a.DID())
	f.l.Allow(f.a.DID())
	if err := f.l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, o := range f.ls[1:] {
		o.Close()
	}
	l := s.open(t, f.clk)
	info, err := l.Tenant(f.a.DID())
	if err != nil || info.Held.Devices != 1 || info.Held.QueuedBytes != 500 || info.Quotas.Devices != 3 {
		t.Fatalf("after reopening: %+v, %v", info, err)
	}
	r, err := l.Usage(f.a.DID(), t0, didtest.Key(t, 50))
	if err != nil || r.Requests != 1 || r.Refused[tenants.QuotaRequests] != 1 {
		t.Fatalf("hour after reopening: %+v, %v", r, err)
	}
}

func checkCountsRefusals(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{QueuedBytes: 100})
	if err := f.l.Check(f.a.DID(), tenants.QuotaQueuedBytes, 60, 40); err != nil {
		t.Fatalf("to the quota: %v", err)
	}
	var qe *tenants.QuotaError
	if err := f.l.Check(f.a.DID(), tenants.QuotaQueuedBytes, 60, 41); !errors.As(err, &qe) || qe.Used != 60 || qe.Want != 41 {
		t.Fatalf("past the quota: %v", err)
	}
	if err := f.l.Check(f.b.DID(), tenants.QuotaQueuedBytes, 1<<40, 1); err != nil {
		t.Fatalf("no quota: %v", err)
	}
	r, err := f.l.Usage(f.a.DID(), t0, didtest.Key(t, 50))
	if err != nil || r.Refused[tenants.QuotaQueuedBytes] != 1 {
		t.Fatalf("hour %+v (%v), want 1 queued_bytes refusal", r, err)
	}
}

// updateBytesQuotaKeptAndChecked: a tenant's update_bytes quota is kept
// as the host put it, Check refuses past it with the quota named (the
// relay counts the bytes held in the tenant's update repository), the
// refusal is in the hour, and the other tenant is not touched.
func updateBytesQuotaKeptAndChecked(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{UpdateBytes: 1000})
	info, err := f.l.Tenant(f.a.DID())
	if err != nil || info.Quotas.UpdateBytes != 1000 {
		t.Fatalf("tenant a: %+v, %v; want update_bytes 1000", info.Quotas, err)
	}
	if err := f.l.Check(f.a.DID(), tenants.QuotaUpdateBytes, 600, 400); err != nil {
		t.Fatalf("to the quota: %v", err)
	}
	var qe *tenants.QuotaError
	err = f.l.Check(f.a.DID(), tenants.QuotaUpdateBytes, 600, 401)
	if !errors.As(err, &qe) || qe.Quota != tenants.QuotaUpdateBytes || qe.Limit != 1000 || qe.Status() != 507 {
		t.Fatalf("past the quota: %v; want a 507 update_bytes refusal of limit 1000", err)
	}
	if err := f.l.Check(f.b.DID(), tenants.QuotaUpdateBytes, 1<<40, 1); err != nil {
		t.Fatalf("tenant b, no quota: %v", err)
	}
	r, err := f.l.Usage(f.a.DID(), t0, didtest.Key(t, 50))
	if err != nil || r.Refused[tenants.QuotaUpdateBytes] != 1 {
		t.Fatalf("hour %+v (%v), want 1 update_bytes refusal", r, err)
	}
}

func moveKeepsTheDeviceCount(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{Devices: 1})
	old, succ := didtest.Key(t, 20).DID(), didtest.Key(t, 21).DID()
	if err := f.l.Enrol(f.a.DID(), old); err != nil {
		t.Fatal(err)
	}
	if err := f.l.Move(old, succ); err != nil {
		t.Fatal(err)
	}
	if owner, ok, _ := f.l.TenantOf(succ); !ok || owner != f.a.DID() {
		t.Fatalf("successor in %v (%v)", owner, ok)
	}
	if _, ok, _ := f.l.TenantOf(old); ok {
		t.Fatal("the old DID is still in the tenant")
	}
	if info, _ := f.l.Tenant(f.a.DID()); info.Held.Devices != 1 {
		t.Fatalf("%d devices after the move, want 1", info.Held.Devices)
	}
	if err := f.l.Forget(succ); err != nil {
		t.Fatal(err)
	}
	if err := f.l.Enrol(f.a.DID(), didtest.Key(t, 22).DID()); err != nil {
		t.Fatalf("a forgotten device's room: %v", err)
	}
}

func usageRecordByteHoursAcrossHours(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{})
	f.clk.Advance(30 * time.Minute)
	if err := f.l.Reserve(f.a.DID(), tenants.QuotaQueuedBytes, 3600); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(45 * time.Minute) // 30 min in the first hour, 15 in the next
	if err := f.l.Release(f.a.DID(), tenants.QuotaQueuedBytes, 3600); err != nil {
		t.Fatal(err)
	}
	relay := didtest.Key(t, 50)
	first, err := f.l.Usage(f.a.DID(), t0, relay)
	if err != nil {
		t.Fatal(err)
	}
	if first.MilliByteHours != 1800*1000 || first.PeakQueuedBytes != 3600 || !first.Complete || first.Hour != "2026-12-05T10:00:00Z" {
		t.Fatalf("first hour %+v, want 1800 byte-hours, peak 3600, complete", first)
	}
	second, err := f.l.Usage(f.a.DID(), t0.Add(time.Hour), relay)
	if err != nil || second.MilliByteHours != 900*1000 || second.Complete {
		t.Fatalf("second hour %+v (%v), want 900 byte-hours, not complete", second, err)
	}
	if other, err := f.l.Usage(f.b.DID(), t0, relay); err != nil || other.MilliByteHours != 0 || other.PeakQueuedBytes != 0 {
		t.Fatalf("tenant b's hour %+v (%v)", other, err)
	}
}

func usageRecordVerifiesAndAChangedOneDoesNot(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{RequestsPerSecond: 2})
	for range 3 {
		f.l.Allow(f.a.DID())
	}
	relay := didtest.Key(t, 50)
	r, err := f.l.Usage(f.a.DID(), t0, relay)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tenancy.VerifyRecord(b, relay.DID())
	if err != nil || got.Requests != 2 || got.Refused[tenants.QuotaRequests] != 1 {
		t.Fatalf("genuine record: %+v, %v", got, err)
	}
	changed := bytes.Replace(b, []byte(`"requests":2`), []byte(`"requests":1`), 1)
	if bytes.Equal(changed, b) {
		t.Fatal("the test did not change the record")
	}
	extra := bytes.Replace(b, []byte(`{`), []byte(`{"discount":1,`), 1)
	for name, c := range map[string]struct {
		b     []byte
		relay *[32]byte
	}{"changed": {changed, nil}, "extra member": {extra, nil}, "another relay's key": {b, &[32]byte{7}}} {
		k := relay.DID()
		if c.relay != nil {
			k = didtest.Key(t, c.relay[0]).DID()
		}
		if _, err := tenancy.VerifyRecord(c.b, k); !errors.Is(err, tenancy.ErrBadRecord) {
			t.Errorf("%s: %v, want tenancy.ErrBadRecord", name, err)
		}
	}
}

func observeAccruesByteHours(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{})
	if err := f.l.Observe(f.a.DID(), tenants.QuotaQueuedBytes, 1000); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(30 * time.Minute)
	if err := f.l.Observe(f.a.DID(), tenants.QuotaQueuedBytes, 0); err != nil {
		t.Fatal(err)
	}
	r, err := f.l.Usage(f.a.DID(), t0, didtest.Key(t, 50))
	if err != nil || r.MilliByteHours != 500*1000 || r.PeakQueuedBytes != 1000 {
		t.Fatalf("%+v, %v; want 500 byte-hours, peak 1000", r, err)
	}
	if err := f.l.Observe(f.a.DID(), tenants.QuotaDevices, 1); err == nil {
		t.Error("devices observed as bytes")
	}
}

// usageRecordCarriesUpdateBytes: the update bytes the relay observes
// (after an upload or a removal, and in its samples) are in the hour's
// record as its peak, signed with the rest: the record verifies, a copy
// with the figure changed does not; the next hour starts from what is
// held when it is first observed in it; an hour without any is a record
// without the member; the other tenant's record has none; the held
// bytes are in the tenant's Info; a negative amount is refused.
func usageRecordCarriesUpdateBytes(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{})
	for _, n := range []int64{3000, 7000, 2000} { // an upload, another, a removal
		if err := f.ls[len(f.ls)-1].Observe(f.a.DID(), tenants.QuotaUpdateBytes, n); err != nil {
			t.Fatal(err)
		}
	}
	relay := didtest.Key(t, 50)
	r, err := f.l.Usage(f.a.DID(), t0, relay)
	if err != nil || r.PeakUpdateBytes == nil || *r.PeakUpdateBytes != 7000 {
		t.Fatalf("%+v, %v; want peak update bytes 7000", r, err)
	}
	b, _ := json.Marshal(r)
	if _, err := tenancy.VerifyRecord(b, relay.DID()); err != nil {
		t.Fatalf("genuine record: %v", err)
	}
	changed := bytes.Replace(b, []byte(`"peakUpdateBytes":7000`), []byte(`"peakUpdateBytes":2000`), 1)
	if bytes.Equal(changed, b) {
		t.Fatal("the test did not change the record")
	}
	if _, err := tenancy.VerifyRecord(changed, relay.DID()); !errors.Is(err, tenancy.ErrBadRecord) {
		t.Errorf("peakUpdateBytes changed: %v; want tenancy.ErrBadRecord", err)
	}
	if info, err := f.l.Tenant(f.a.DID()); err != nil || info.Held.UpdateBytes != 2000 {
		t.Errorf("tenant a holds %d update bytes (%v); want 2000", info.Held.UpdateBytes, err)
	}
	if other, err := f.l.Usage(f.b.DID(), t0, relay); err != nil || other.PeakUpdateBytes != nil {
		t.Errorf("tenant b's record %+v (%v); want no update bytes", other, err)
	}
	if r, err := f.l.Usage(f.a.DID(), t0.Add(time.Hour), relay); err != nil || r.PeakUpdateBytes != nil {
		t.Errorf("the next hour before an observation: %+v (%v); want no update bytes", r, err)
	}
	f.clk.Advance(time.Hour)
	if err := f.l.Observe(f.a.DID(), tenants.QuotaUpdateBytes, 2000); err != nil {
		t.Fatal(err)
	}
	if r, err := f.l.Usage(f.a.DID(), t0.Add(time.Hour), relay); err != nil || r.PeakUpdateBytes == nil || *r.PeakUpdateBytes != 2000 {
		t.Errorf("the next hour: %+v (%v); want peak update bytes 2000", r, err)
	}
	if err := f.l.Observe(f.a.DID(), tenants.QuotaUpdateBytes, -1); err == nil {
		t.Error("a negative amount of update bytes was observed")
	}
	if err := f.l.Reserve(f.a.DID(), tenants.QuotaUpdateBytes, 1); err == nil {
		t.Error("update bytes reserved in the ledger: the repository counts them")
	}
}

func onlyTheOwnersOperatorsMayAct(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{})
	opA, opB, host := didtest.Key(t, 30).DID(), didtest.Key(t, 31).DID(), didtest.Key(t, 32).DID()
	devA, devB, loose := didtest.Key(t, 40).DID(), didtest.Key(t, 41).DID(), didtest.Key(t, 42).DID()
	for owner, dev := range map[*did.PrivateKey]did.DID{f.a: devA, f.b: devB} {
		if err := f.l.Enrol(owner.DID(), dev); err != nil {
			t.Fatal(err)
		}
	}
	setList(t, f, f.a, tenancy.OperatorList{Operators: []string{opA.String()}}, t0)
	setList(t, f, f.b, tenancy.OperatorList{Operators: []string{opB.String()}, HostSeesDevices: true}, t0)
	for _, c := range []struct {
		op, dev did.DID
		ok      bool
	}{{opA, devA, true}, {opB, devB, true}, {opA, devB, false}, {opB, devA, false}, {host, devA, false}, {host, devB, false}} {
		in, err := f.l.MayAct(c.op, c.dev)
		if !in || (err == nil) != c.ok || (err != nil && !errors.Is(err, tenants.ErrNotOperator)) {
			t.Errorf("MayAct(%s, %s) = %v, %v; want allowed %v", c.op, c.dev, in, err, c.ok)
		}
	}
	if in, err := f.l.MayAct(host, loose); in || err != nil {
		t.Errorf("a device in no tenant: %v, %v", in, err)
	}
	if ts, _ := f.l.OperatorTenants(opA); !slices.Equal(ts, []did.DID{f.a.DID()}) {
		t.Errorf("opA operates %v", ts)
	}
	if info, _ := f.l.Tenant(f.b.DID()); !info.HostSeesDevices {
		t.Error("b's owner let the host see its devices; the ledger lost it")
	}
}

func operatorListRefusals(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{})
	setList(t, f, f.a, tenancy.OperatorList{Operators: []string{didtest.Key(t, 30).DID().String()}}, t0)
	stranger := didtest.Key(t, 60)
	for name, c := range map[string]struct {
		k      *did.PrivateKey
		issued time.Time
		ttl    time.Duration
		list   tenancy.OperatorList
	}{
		"not a tenant's owner": {stranger, t0.Add(time.Minute), 0, tenancy.OperatorList{}},
		"older than the list":  {f.a, t0.Add(-time.Minute), 0, tenancy.OperatorList{}},
		"expired":              {f.a, t0.Add(-2 * time.Hour), time.Hour, tenancy.OperatorList{}},
		"not a DID":            {f.a, t0.Add(time.Minute), 0, tenancy.OperatorList{Operators: []string{"alice"}}},
	} {
		obj, err := tenancy.SignOperatorList(c.k, c.list, c.issued, c.ttl)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.l.SetOperators(obj); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if info, _ := f.l.Tenant(f.a.DID()); len(info.Operators) != 1 {
		t.Errorf("a refused list changed the operators: %v", info.Operators)
	}
	obj, _ := tenancy.SignOperatorList(f.a, tenancy.OperatorList{}, t0.Add(time.Minute), 0)
	obj[len(obj)/2] ^= 1
	if _, err := f.l.SetOperators(obj); err == nil {
		t.Error("a damaged list was accepted")
	}
}

// lockIsOneHolderAtATime: of many holders of one lock, through every
// Store, one at a time holds it; another name is apart.
func lockIsOneHolderAtATime(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{})
	var in, most int64
	race(t, 24, func(i int) error {
		unlock, err := f.at(i).Lock(t.Context(), "queued "+f.a.DID().String())
		if err != nil {
			return err
		}
		n := atomic.AddInt64(&in, 1)
		for {
			m := atomic.LoadInt64(&most)
			if n <= m || atomic.CompareAndSwapInt64(&most, m, n) {
				break
			}
		}
		other, err := f.at(i+1).Lock(t.Context(), "queued "+f.b.DID().String())
		if err != nil {
			return err
		}
		other()
		atomic.AddInt64(&in, -1)
		unlock()
		return nil
	})
	if most != 1 {
		t.Fatalf("%d holders of one lock at once, want 1", most)
	}
}

func setList(t *testing.T, f *fixture, owner *did.PrivateKey, list tenancy.OperatorList, issued time.Time) {
	t.Helper()
	obj, err := tenancy.SignOperatorList(owner, list, issued, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.l.SetOperators(obj)
	if err != nil || got != owner.DID() {
		t.Fatalf("SetOperators: %v, %v", got, err)
	}
}

// oneTenantPerDeviceUnderRace: both owners enrol one device at once,
// through every Store: it ends in exactly one tenant, which counts it
// once, and the other tenant holds nothing.
func oneTenantPerDeviceUnderRace(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{})
	dev := didtest.Key(t, 70).DID()
	var won sync.Map
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := []*did.PrivateKey{f.a, f.b}[i%2].DID()
			switch err := f.at(i).Enrol(owner, dev); {
			case err == nil:
				won.Store(owner, true)
			case !errors.Is(err, tenants.ErrOtherTenant):
				t.Errorf("enrolment %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	owner, ok, err := f.l.TenantOf(dev)
	if err != nil || !ok {
		t.Fatalf("TenantOf: %v, %v", ok, err)
	}
	won.Range(func(k, _ any) bool {
		if k.(did.DID) != owner {
			t.Errorf("%s was told it enrolled the device, which is in %s", k, owner)
		}
		return true
	})
	for _, o := range []did.DID{f.a.DID(), f.b.DID()} {
		info, err := f.l.Tenant(o)
		want := int64(0)
		if o == owner {
			want = 1
		}
		if err != nil || info.Held.Devices != want {
			t.Errorf("tenant %s holds %d devices (%v), want %d", o, info.Held.Devices, err, want)
		}
	}
}
