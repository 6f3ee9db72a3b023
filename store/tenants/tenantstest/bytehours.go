package tenantstest

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/tenants"
)

// byteHour is one byte-hour in byte-milliseconds.
const byteHour = int64(time.Hour / time.Millisecond)

// periodByteMillis is what owner's bytes were held this period so far,
// as the ledger says at f's clock.
func periodByteMillis(t *testing.T, f *fixture, owner did.DID) int64 {
	t.Helper()
	info, err := f.l.Tenant(owner)
	if err != nil {
		t.Fatal(err)
	}
	return info.Held.PeriodByteMillisAt(f.clk.Now())
}

// mustHold calls Hold and fails the test on an error.
func mustHold(t *testing.T, l tenants.Store, owner did.DID, held, n int64) {
	t.Helper()
	if err := l.Hold(owner, held, n); err != nil {
		t.Fatalf("Hold(%d, %d): %v", held, n, err)
	}
}

// wantByteHoursRefusal checks that err is the 507 byte_hours refusal of
// a quota of limit byte-hours with used of them held.
func wantByteHoursRefusal(t *testing.T, err error, limit, used int64) {
	t.Helper()
	var qe *tenants.QuotaError
	if !errors.As(err, &qe) || qe.Quota != tenants.QuotaByteHours || qe.Status() != http.StatusInsufficientStorage || qe.Limit != limit || qe.Used != used {
		t.Fatalf("Hold past the quota: %v; want a 507 byte_hours refusal, %d of %d byte-hours", err, used, limit)
	}
}

// byteHoursQuotaReachedExactly: 1000 bytes held for an hour reach a
// quota of 1000 byte-hours at that hour and not a millisecond before;
// the next request to queue is refused 507 byte_hours, the bytes held
// keep accruing until they leave, the other tenant is not touched, and
// the next calendar month starts from nothing (a change that spans the
// months' boundary counts only its part in the new one).
func byteHoursQuotaReachedExactly(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{ByteHours: 1000})
	a, b := f.a.DID(), f.b.DID()
	mustHold(t, f.l, a, 0, 400)
	mustHold(t, f.l, a, 400, 600)
	f.clk.Advance(time.Hour - time.Millisecond)
	if got, want := periodByteMillis(t, f, a), 1000*(byteHour-1); got != want {
		t.Fatalf("after 1000 bytes for an hour less 1 ms: %d byte-ms, want %d", got, want)
	}
	mustHold(t, f.l, a, 1000, 1) // 1 ms short of the quota: queued
	f.clk.Advance(time.Millisecond)
	wantByteHoursRefusal(t, f.l.Hold(a, 1001, 1), 1000, 1000)
	if got, want := periodByteMillis(t, f, a), 1000*byteHour+1; got != want {
		t.Fatalf("at the quota: %d byte-ms, want %d", got, want)
	}
	mustHold(t, f.l, b, 0, 1<<20) // tenant b has no such quota
	// What is held keeps accruing; its removal (the relay's count after
	// an acknowledgement) stops it.
	f.clk.Advance(30 * time.Minute)
	if err := f.l.Observe(a, tenants.QuotaQueuedBytes, 0); err != nil {
		t.Fatal(err)
	}
	held := 1000*byteHour + 1 + 1001*byteHour/2
	f.clk.Advance(2 * time.Hour)
	if got := periodByteMillis(t, f, a); got != held {
		t.Fatalf("after the acknowledgement: %d byte-ms, want %d", got, held)
	}
	wantByteHoursRefusal(t, f.l.Hold(a, 0, 1), 1000, held/byteHour)
	r, err := f.l.Usage(a, t0.Add(time.Hour), didtest.Key(t, 50))
	if err != nil || r.MilliByteHours != 1001*byteHour/2/3600 {
		t.Fatalf("the second hour's record %+v (%v)", r, err)
	}
	// The next month: b's bytes held across midnight count from it.
	f.clk.Set(time.Date(2026, 12, 31, 23, 30, 0, 0, time.UTC))
	if err := f.l.Observe(b, tenants.QuotaQueuedBytes, 3600); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Hour)
	if got := periodByteMillis(t, f, b); got != 3600*byteHour/2 {
		t.Fatalf("b in January: %d byte-ms, want %d (30 minutes of 3600 bytes)", got, 3600*byteHour/2)
	}
	if got := periodByteMillis(t, f, a); got != 0 {
		t.Fatalf("a in January: %d byte-ms, want 0", got)
	}
	mustHold(t, f.l, a, 0, 1000)
	f.clk.Advance(time.Hour)
	wantByteHoursRefusal(t, f.l.Hold(a, 1000, 1), 1000, 1000)
}

// byteHoursExactUnderConcurrentSenders: senders race through every
// Store as the relay's enqueues do (the tenant's Lock, the bytes its
// queue holds counted under it, Hold, the bytes queued): the ledger's
// bytes are exactly what was queued, so the quota is reached exactly
// when those bytes times the time say; at that instant every racer is
// refused, and nothing they raced for is queued.
func byteHoursExactUnderConcurrentSenders(t *testing.T, s suite) {
	f := newFixture(t, s, tenants.Quotas{ByteHours: 2400})
	a := f.a.DID()
	var queued atomic.Int64 // the relay's queue for a's devices
	send := func(i int) error {
		unlock, err := f.at(i).Lock(t.Context(), "queued "+a.String())
		if err != nil {
			return err
		}
		defer unlock()
		held := queued.Load()
		if err := f.at(i).Hold(a, held, 100); err != nil {
			return err
		}
		queued.Store(held + 100)
		return nil
	}
	if ok, refused := race(t, 24, send); ok != 24 || len(refused) != 0 {
		t.Fatalf("%d queued, %d refused; want all 24 queued", ok, len(refused))
	}
	// 2400 bytes reach 2400 byte-hours in an hour; a millisecond before,
	// 24 more senders are all queued and take it there half a ms sooner.
	f.clk.Advance(time.Hour - time.Millisecond)
	if ok, _ := race(t, 24, send); ok != 24 {
		t.Fatalf("a ms before the quota: %d of 24 queued", ok)
	}
	f.clk.Advance(time.Millisecond)
	ok, refused := race(t, 24, send)
	if ok != 0 || len(refused) != 24 {
		t.Fatalf("at the quota: %d queued, %d refused; want all 24 refused", ok, len(refused))
	}
	for _, qe := range refused {
		if qe.Quota != tenants.QuotaByteHours {
			t.Fatalf("refusal %+v", qe)
		}
	}
	info, err := f.l.Tenant(a)
	if err != nil || info.Held.QueuedBytes != 4800 || queued.Load() != 4800 {
		t.Fatalf("the ledger holds %d bytes (%v), the queue %d; want 4800 both", info.Held.QueuedBytes, err, queued.Load())
	}
	if got, want := info.Held.PeriodByteMillisAt(f.clk.Now()), 2400*(byteHour-1)+4800; got != want {
		t.Fatalf("%d byte-ms at the quota, want %d", got, want)
	}
}
