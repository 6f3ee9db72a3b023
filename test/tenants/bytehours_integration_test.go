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

// TestByteHoursOnTheCluster: three real relays on a 3-node JetStream
// cluster share tenant a's byte-hours (quota 100 a month): 15 senders
// spread over the relays to a's device are all queued; once the month's
// byte-hours read at one relay reach the quota, a's next message is
// refused 507 byte_hours at each of the three relays and not queued,
// while b's are queued.
func TestByteHoursOnTheCluster(t *testing.T) {
	w, relays := newClusterWorld(t, `{"byteHours":100}`)
	devA, devB := w.enrolAt(t, "ownerA", relays[0].URL), w.enrolAt(t, "ownerB", relays[1].URL)
	if !ownerOf(t, w, relays[2], devA) {
		t.Fatal("a's device is not in tenant a")
	}
	if queued, st := clusterBurst(relays, []*did.PrivateKey{devA}, 15, "bh"); queued != 15 {
		t.Fatalf("a's 15 senders over 3 relays: %d queued (answers %v), want all", queued, st)
	}
	w.relay = relays[1]
	for deadline := time.Now().Add(2 * time.Minute); w.milliByteHours(t, "ownerA") < 100_000; {
		if time.Now().After(deadline) {
			t.Fatalf("a's byte-hours stay at %d thousandths below its quota of 100", w.milliByteHours(t, "ownerA"))
		}
		time.Sleep(500 * time.Millisecond) // the relays' real clocks accrue them
	}
	sender, _ := did.Generate(nil)
	for i, r := range relays {
		id := "bh-past" + string(rune('1'+i))
		a := relaytest.Post(t, r.URL, devA.DID().String(), sender, "1.0", relaytest.Body(id, clusterPad))
		if a.Status != 507 || !strings.Contains(string(a.Body), `"kind":"byte_hours"`) {
			t.Fatalf("a's message at relay %d past its byte-hours: %s, want 507 byte_hours", i+1, a)
		}
		if b := relaytest.Send(r.URL, devB.DID(), sender, "bh-b"+string(rune('1'+i)), clusterPad); b.Status != 503 || !b.Queued {
			t.Fatalf("b's message at relay %d: %+v, want queued", i+1, b)
		}
	}
	if n, err := relaytest.Count(relays[2].URL, devA); err != nil || n != 15 {
		t.Fatalf("a's device holds %d records (%v), want the 15 queued", n, err)
	}
}
