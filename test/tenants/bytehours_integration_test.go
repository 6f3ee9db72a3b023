//go:build integration

package tenants

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
)

// TestByteHoursQuotaOnOneRelay: the real torpor-relay with tenant a's
// quota of 1 byte-hour a month queues a's first message of about 5 KB;
// once the relay's list shows a's byte-hours at the quota (about a
// second of the real clock later), a's next message is refused 507
// tenant_quota byte_hours and not queued, while b's is queued.
func TestByteHoursQuotaOnOneRelay(t *testing.T) {
	w := newHostedWorld(t, `{"byteHours":1}`, `{}`)
	devA, devB := w.enrol(t, "ownerA"), w.enrol(t, "ownerB")
	w.relay.Next(t, 2, "agent admitted by its owner's enrolment")
	pad := strings.Repeat("x", 3600)
	sender, _ := did.Generate(nil)
	if a := relaytest.Send(w.relay.URL, devA.DID(), sender, "bh1", pad); a.Status != 503 || !a.Queued {
		t.Fatalf("a's first message: %+v, want queued", a)
	}
	for deadline := time.Now().Add(2 * time.Minute); w.milliByteHours(t, "ownerA") < 1000; {
		if time.Now().After(deadline) {
			t.Fatalf("a's byte-hours stay at %d thousandths below its quota of 1", w.milliByteHours(t, "ownerA"))
		}
		time.Sleep(100 * time.Millisecond) // the relay's real clock accrues them
	}
	r := relaytest.Post(t, w.relay.URL, devA.DID().String(), sender, "1.0", relaytest.Body("bh2", pad))
	var body struct {
		Error struct {
			Data struct{ Error, Kind string }
		}
	}
	json.Unmarshal(r.Body, &body)
	if r.Status != 507 || body.Error.Data.Error != "tenant_quota" || body.Error.Data.Kind != "byte_hours" {
		t.Fatalf("a's message past its byte-hours: %s, want 507 tenant_quota byte_hours", r)
	}
	if n, err := relaytest.Count(w.relay.URL, devA); err != nil || n != 1 {
		t.Fatalf("a's device holds %d records (%v), want its first only", n, err)
	}
	if a := relaytest.Send(w.relay.URL, devB.DID(), sender, "bh3", pad); a.Status != 503 || !a.Queued {
		t.Fatalf("b's message: %+v, want queued", a)
	}
}

// milliByteHours is the byte-hours (in thousandths) of owner's tenant
// this month, in torporctl tenant list as the host.
func (w *world) milliByteHours(t *testing.T, owner string) int64 {
	t.Helper()
	out := w.ok(t, "tenant", "list", "--relay", w.relay.URL, "--key", w.files["host"])
	var list struct {
		Tenants []struct {
			Owner          string
			MilliByteHours int64
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("torporctl tenant list: %v: %s", err, out)
	}
	for _, tt := range list.Tenants {
		if tt.Owner == w.keys[owner].DID().String() {
			return tt.MilliByteHours
		}
	}
	t.Fatalf("tenant %s is not in the list: %s", owner, out)
	return 0
}
