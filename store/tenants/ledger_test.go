package tenants

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
)

var t0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

type fixture struct {
	l    *Ledger
	clk  *clocktest.Clock
	path string
	a, b *did.PrivateKey
}

func key(t *testing.T, i byte) *did.PrivateKey {
	t.Helper()
	k, err := did.NewKeyFromSeed(bytes.Repeat([]byte{i}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newFixture opens a ledger in a real bbolt file with tenants a (quotas
// qa) and b (no limits).
func newFixture(t *testing.T, qa Quotas) *fixture {
	t.Helper()
	f := &fixture{clk: clocktest.New(t0), path: filepath.Join(t.TempDir(), "tenants.db"), a: key(t, 1), b: key(t, 2)}
	l, err := OpenLedger(f.path, f.clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	f.l = l
	if err := l.Put(f.a.DID(), qa); err != nil {
		t.Fatal(err)
	}
	if err := l.Put(f.b.DID(), Quotas{}); err != nil {
		t.Fatal(err)
	}
	return f
}

// race runs n goroutines of fn at once and returns how many succeeded and
// the refusals, which must all be *QuotaErrors.
func race(t *testing.T, n int, fn func(i int) error) (ok int64, refused []*QuotaError) {
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
			var qe *QuotaError
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

func TestDevicesQuotaExactUnderConcurrentEnrolments(t *testing.T) {
	f := newFixture(t, Quotas{Devices: 10})
	ok, refused := race(t, 64, func(i int) error { return f.l.Enrol(f.a.DID(), key(t, byte(100+i)).DID()) })
	if ok != 10 || len(refused) != 54 {
		t.Fatalf("%d enrolled, %d refused; want 10 and 54", ok, len(refused))
	}
	for _, qe := range refused {
		if qe.Quota != QuotaDevices || qe.Status() != http.StatusInsufficientStorage || qe.Tenant != f.a.DID() || qe.Limit != 10 {
			t.Fatalf("refusal %+v", qe)
		}
	}
	devs, err := f.l.Devices(f.a.DID())
	if err != nil || len(devs) != 10 {
		t.Fatalf("tenant a has %d devices (%v), want 10", len(devs), err)
	}
	// Tenant b sees nothing of a's quota.
	if err := f.l.Enrol(f.b.DID(), key(t, 200).DID()); err != nil {
		t.Fatalf("tenant b: %v", err)
	}
	if info, _ := f.l.Tenant(f.a.DID()); info.Held.Devices != 10 {
		t.Fatalf("a holds %d devices", info.Held.Devices)
	}
}

func TestQueuedBytesQuotaExactUnderConcurrentSenders(t *testing.T) {
	f := newFixture(t, Quotas{QueuedBytes: 1000})
	ok, refused := race(t, 100, func(int) error { return f.l.Reserve(f.a.DID(), QuotaQueuedBytes, 37) })
	if ok != 27 || len(refused) != 73 {
		t.Fatalf("%d reserved, %d refused; want 27 and 73 (1000/37)", ok, len(refused))
	}
	info, err := f.l.Tenant(f.a.DID())
	if err != nil || info.Held.QueuedBytes != 27*37 {
		t.Fatalf("a holds %d bytes (%v), want %d", info.Held.QueuedBytes, err, 27*37)
	}
	if qe := refused[0]; qe.Quota != QuotaQueuedBytes || qe.Want != 37 || qe.Used+qe.Want <= qe.Limit {
		t.Fatalf("refusal %+v", qe)
	}
	if err := f.l.Reserve(f.b.DID(), QuotaQueuedBytes, 1<<20); err != nil {
		t.Fatalf("tenant b: %v", err)
	}
	// What is released can be spent again, exactly.
	if err := f.l.Release(f.a.DID(), QuotaQueuedBytes, 37); err != nil {
		t.Fatal(err)
	}
	ok, _ = race(t, 10, func(int) error { return f.l.Reserve(f.a.DID(), QuotaQueuedBytes, 37) })
	if ok != 1 {
		t.Fatalf("%d reservations after one release, want 1", ok)
	}
}

func TestKeyPackageQuota(t *testing.T) {
	f := newFixture(t, Quotas{KeyPackageBytes: 4096})
	if err := f.l.Reserve(f.a.DID(), QuotaKeyPackageBytes, 4096); err != nil {
		t.Fatal(err)
	}
	var qe *QuotaError
	if err := f.l.Reserve(f.a.DID(), QuotaKeyPackageBytes, 1); !errors.As(err, &qe) || qe.Quota != QuotaKeyPackageBytes {
		t.Fatalf("past the quota: %v", err)
	}
	// Queued bytes are a quota of their own.
	if err := f.l.Reserve(f.a.DID(), QuotaQueuedBytes, 1<<20); err != nil {
		t.Fatal(err)
	}
}

func TestRequestsPerSecondExact(t *testing.T) {
	f := newFixture(t, Quotas{RequestsPerSecond: 5})
	ok, refused := race(t, 50, func(int) error { return f.l.Allow(f.a.DID()) })
	if ok != 5 || len(refused) != 45 {
		t.Fatalf("%d allowed, %d refused in one second; want 5 and 45", ok, len(refused))
	}
	if refused[0].Status() != http.StatusTooManyRequests || refused[0].Quota != QuotaRequests {
		t.Fatalf("refusal %+v", refused[0])
	}
	if ok, _ := race(t, 50, func(int) error { return f.l.Allow(f.b.DID()) }); ok != 50 {
		t.Fatalf("tenant b: %d of 50 allowed", ok)
	}
	f.clk.Advance(time.Second)
	if ok, _ := race(t, 50, func(int) error { return f.l.Allow(f.a.DID()) }); ok != 5 {
		t.Fatalf("next second: %d allowed, want 5", ok)
	}
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t, Quotas{})
	nobody := key(t, 9).DID()
	for name, err := range map[string]error{
		"unknown tenant":   f.l.Reserve(nobody, QuotaQueuedBytes, 1),
		"enrol in unknown": f.l.Enrol(nobody, key(t, 10).DID()),
		"rate of unknown":  f.l.Allow(nobody),
	} {
		if !errors.Is(err, ErrNoTenant) {
			t.Errorf("%s: %v, want ErrNoTenant", name, err)
		}
	}
	if err := f.l.Release(f.a.DID(), QuotaQueuedBytes, 1); !errors.Is(err, ErrUnderflow) {
		t.Errorf("release of nothing: %v", err)
	}
	if err := f.l.Reserve(f.a.DID(), QuotaDevices, 1); err == nil {
		t.Error("devices reserved as bytes")
	}
	if err := f.l.Reserve(f.a.DID(), QuotaQueuedBytes, -1); err == nil {
		t.Error("negative reservation")
	}
	if err := f.l.Put(f.a.DID(), Quotas{Devices: -1}); err == nil {
		t.Error("negative quota")
	}
	dev := key(t, 11).DID()
	if err := f.l.Enrol(f.a.DID(), dev); err != nil {
		t.Fatal(err)
	}
	if err := f.l.Enrol(f.b.DID(), dev); !errors.Is(err, ErrOtherTenant) {
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

func TestLedgerKeepsEverythingAcrossReopen(t *testing.T) {
	f := newFixture(t, Quotas{Devices: 3, RequestsPerSecond: 1})
	if err := f.l.Enrol(f.a.DID(), key(t, 20).DID()); err != nil {
		t.Fatal(err)
	}
	if err := f.l.Reserve(f.a.DID(), QuotaQueuedBytes, 500); err != nil {
		t.Fatal(err)
	}
	f.l.Allow(f.a.DID())
	f.l.Allow(f.a.DID())
	if err := f.l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := OpenLedger(f.path, f.clk)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	info, err := l.Tenant(f.a.DID())
	if err != nil || info.Held.Devices != 1 || info.Held.QueuedBytes != 500 || info.Quotas.Devices != 3 {
		t.Fatalf("after reopening: %+v, %v", info, err)
	}
	r, err := l.Usage(f.a.DID(), t0, key(t, 50))
	if err != nil || r.Requests != 1 || r.Refused[QuotaRequests] != 1 {
		t.Fatalf("hour after reopening: %+v, %v", r, err)
	}
}

func ExampleQuotaError() {
	owner := did.MustParse("did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK")
	fmt.Println(&QuotaError{Tenant: owner, Quota: QuotaQueuedBytes, Limit: 1000, Used: 999, Want: 37})
	// Output: tenant did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK quota queued_bytes reached: 999 of 1000 used, 37 more asked
}

func TestCheckCountsRefusals(t *testing.T) {
	f := newFixture(t, Quotas{QueuedBytes: 100})
	if err := f.l.Check(f.a.DID(), QuotaQueuedBytes, 60, 40); err != nil {
		t.Fatalf("to the quota: %v", err)
	}
	var qe *QuotaError
	if err := f.l.Check(f.a.DID(), QuotaQueuedBytes, 60, 41); !errors.As(err, &qe) || qe.Used != 60 || qe.Want != 41 {
		t.Fatalf("past the quota: %v", err)
	}
	if err := f.l.Check(f.b.DID(), QuotaQueuedBytes, 1<<40, 1); err != nil {
		t.Fatalf("no quota: %v", err)
	}
	r, err := f.l.Usage(f.a.DID(), t0, key(t, 50))
	if err != nil || r.Refused[QuotaQueuedBytes] != 1 {
		t.Fatalf("hour %+v (%v), want 1 queued_bytes refusal", r, err)
	}
}

func TestMoveKeepsTheDeviceCount(t *testing.T) {
	f := newFixture(t, Quotas{Devices: 1})
	old, succ := key(t, 20).DID(), key(t, 21).DID()
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
	if err := f.l.Enrol(f.a.DID(), key(t, 22).DID()); err != nil {
		t.Fatalf("a forgotten device's room: %v", err)
	}
}
