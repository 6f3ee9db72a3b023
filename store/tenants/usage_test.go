package tenants

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/transport/tenancy"
)

func TestUsageRecordByteHoursAcrossHours(t *testing.T) {
	f := newFixture(t, Quotas{})
	f.clk.Advance(30 * time.Minute)
	if err := f.l.Reserve(f.a.DID(), QuotaQueuedBytes, 3600); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(45 * time.Minute) // 30 min in the first hour, 15 in the next
	if err := f.l.Release(f.a.DID(), QuotaQueuedBytes, 3600); err != nil {
		t.Fatal(err)
	}
	relay := key(t, 50)
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

func TestUsageRecordVerifiesAndAChangedOneDoesNot(t *testing.T) {
	f := newFixture(t, Quotas{RequestsPerSecond: 2})
	for range 3 {
		f.l.Allow(f.a.DID())
	}
	relay := key(t, 50)
	r, err := f.l.Usage(f.a.DID(), t0, relay)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tenancy.VerifyRecord(b, relay.DID())
	if err != nil || got.Requests != 2 || got.Refused[QuotaRequests] != 1 {
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
			k = key(t, c.relay[0]).DID()
		}
		if _, err := tenancy.VerifyRecord(c.b, k); !errors.Is(err, tenancy.ErrBadRecord) {
			t.Errorf("%s: %v, want tenancy.ErrBadRecord", name, err)
		}
	}
}

func TestObserveAccruesByteHours(t *testing.T) {
	f := newFixture(t, Quotas{})
	if err := f.l.Observe(f.a.DID(), QuotaQueuedBytes, 1000); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(30 * time.Minute)
	if err := f.l.Observe(f.a.DID(), QuotaQueuedBytes, 0); err != nil {
		t.Fatal(err)
	}
	r, err := f.l.Usage(f.a.DID(), t0, key(t, 50))
	if err != nil || r.MilliByteHours != 500*1000 || r.PeakQueuedBytes != 1000 {
		t.Fatalf("%+v, %v; want 500 byte-hours, peak 1000", r, err)
	}
	if err := f.l.Observe(f.a.DID(), QuotaDevices, 1); err == nil {
		t.Error("devices observed as bytes")
	}
}
