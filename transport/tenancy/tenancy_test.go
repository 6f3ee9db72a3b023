package tenancy

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/internal/jcs"
)

func TestQuotaErrorStatus(t *testing.T) {
	owner := didtest.Key(t, 1).DID()
	if s := (&QuotaError{Tenant: owner, Quota: QuotaRequests}).Status(); s != http.StatusTooManyRequests {
		t.Errorf("rate: %d", s)
	}
	for _, q := range []Quota{QuotaDevices, QuotaQueuedBytes, QuotaKeyPackageBytes, QuotaUpdateBytes, QuotaByteHours} {
		if s := (&QuotaError{Tenant: owner, Quota: q}).Status(); s != http.StatusInsufficientStorage {
			t.Errorf("%s: %d", q, s)
		}
	}
	if err := (Quotas{QueuedBytes: -5}).Check(); err == nil {
		t.Error("a negative quota passed Check")
	}
	if err := (Quotas{UpdateBytes: -1}).Check(); err == nil || !strings.Contains(err.Error(), "update_bytes") {
		t.Errorf("a negative update_bytes: %v; want it named", err)
	}
	for _, n := range []int64{-1, MaxByteHours + 1} {
		if err := (Quotas{ByteHours: n}).Check(); err == nil || !strings.Contains(err.Error(), "byte_hours") {
			t.Errorf("byte_hours %d: %v; want it refused and named", n, err)
		}
	}
	if err := (Quotas{ByteHours: MaxByteHours}).Check(); err != nil {
		t.Errorf("byte_hours %d, the largest: %v", int64(MaxByteHours), err)
	}
	if msg := (&QuotaError{Tenant: owner, Quota: QuotaByteHours, Limit: 10, Used: 12}).Error(); !strings.Contains(msg, "12 of 10 byte-hours") {
		t.Errorf("byte_hours refusal %q; want it to say 12 of 10 byte-hours", msg)
	}
}

// TestRecordEveryMemberIsSigned changes each member of a signed record in
// turn; none may still verify.
func TestRecordEveryMemberIsSigned(t *testing.T) {
	relay := didtest.Key(t, 2)
	r := Record{Tenant: didtest.Key(t, 1).DID().String(), Relay: relay.DID().String(), Hour: "2026-12-05T10:00:00Z", Complete: true,
		Requests: 10, Refused: map[Quota]int64{QuotaRequests: 3}, PeakDevices: 2, PeakQueuedBytes: 100, PeakKeyPackageBytes: 50, MilliByteHours: 7, PeakUpdateBytes: new(int64(4096))}
	if err := r.Sign(relay); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r)
	if _, err := VerifyRecord(b, relay.DID()); err != nil {
		t.Fatalf("genuine: %v", err)
	}
	if !strings.Contains(string(b), `"peakUpdateBytes":4096`) {
		t.Fatalf("the record %s carries no peakUpdateBytes", b)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for k, v := range m {
		if k == "signature" || k == "relay" {
			continue
		}
		c := map[string]any{}
		for k2, v2 := range m {
			c[k2] = v2
		}
		switch v := v.(type) {
		case float64:
			c[k] = v + 1
		case bool:
			c[k] = !v
		case string:
			c[k] = didtest.Key(t, 9).DID().String()
		default:
			c[k] = map[string]int{"requests_per_second": 4}
		}
		cb, _ := json.Marshal(c)
		if _, err := VerifyRecord(cb, relay.DID()); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s changed: %v", k, err)
		}
	}
}

// TestRecordWithoutUpdateBytes: a record signed without peakUpdateBytes
// (as a relay from before it was counted signs every record, and as one
// now signs an hour in which the tenant held no update bytes) verifies;
// the member added to it, even as 0, does not, nor one removed from a
// record signed with it.
func TestRecordWithoutUpdateBytes(t *testing.T) {
	relay := didtest.Key(t, 2)
	// The members a relay of the previous release signs, in its order.
	old := map[string]any{"tenant": didtest.Key(t, 1).DID().String(), "relay": relay.DID().String(), "hour": "2026-12-05T10:00:00Z",
		"complete": true, "requests": 2, "refused": map[string]int{"requests_per_second": 1}, "peakDevices": 1,
		"peakQueuedBytes": 10, "peakKeyPackageBytes": 0, "milliByteHours": 3}
	ob, _ := json.Marshal(old)
	c, err := jcs.Transform(ob)
	if err != nil {
		t.Fatal(err)
	}
	old["signature"] = base64.RawURLEncoding.EncodeToString(relay.Sign(append([]byte(RecordContext), c...)))
	b, _ := json.Marshal(old)
	r, err := VerifyRecord(b, relay.DID())
	if err != nil || r.PeakUpdateBytes != nil {
		t.Fatalf("a record without peakUpdateBytes: %+v, %v; want it verified, without the member", r, err)
	}
	for _, v := range []int64{0, 5} {
		old["peakUpdateBytes"] = v
		b, _ := json.Marshal(old)
		if _, err := VerifyRecord(b, relay.DID()); !errors.Is(err, ErrBadRecord) {
			t.Errorf("peakUpdateBytes %d added: %v; want ErrBadRecord", v, err)
		}
	}
	n := Record{Tenant: didtest.Key(t, 1).DID().String(), Relay: relay.DID().String(), Hour: "2026-12-05T10:00:00Z", PeakUpdateBytes: new(int64(0))}
	if err := n.Sign(relay); err != nil {
		t.Fatal(err)
	}
	n.PeakUpdateBytes = nil
	b, _ = json.Marshal(n)
	if _, err := VerifyRecord(b, relay.DID()); !errors.Is(err, ErrBadRecord) {
		t.Errorf("peakUpdateBytes removed from a record signed with it: %v; want ErrBadRecord", err)
	}
}

func TestOperatorListPurpose(t *testing.T) {
	owner := didtest.Key(t, 1)
	o, err := governed.Sign(owner, governed.Template{IssuedAt: time.Unix(1e9, 0), Semantic: governed.Semantic{Schema: OperatorListSchema},
		Payload: OperatorList{Operators: []string{}}, Purpose: "torpor:enrolment"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(o)
	if _, _, err := ParseOperatorList(b); err == nil {
		t.Error("an enrolment was taken for an operator list")
	}
	good, _ := SignOperatorList(owner, OperatorList{Operators: []string{didtest.Key(t, 3).DID().String()}}, time.Unix(1e9, 0), 0)
	if o, l, err := ParseOperatorList(good); err != nil || o.Issuer != owner.DID() || len(l.Operators) != 1 {
		t.Errorf("genuine list: %v", err)
	}
}
