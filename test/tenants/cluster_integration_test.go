//go:build integration

package tenants

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// clusterQueuedBytes is tenant a's queued_bytes quota on the cluster.
const clusterQueuedBytes = 6000

// clusterPad pads each message of the cluster's bursts, so that a few
// fill a's quota.
var clusterPad = strings.Repeat("x", 700)

// TestTwoTenantsOnTheCluster runs three real relays on a 3-node
// JetStream cluster with tenants a (3 devices, 6000 queued bytes) and b
// (no limits), the ledger in the cluster's shared bucket: eight of a's
// devices enrolling at once over the three relays get exactly 3 into
// the tenant; at every relay each tenant's operator sees only its own
// devices and the host none of theirs; at every relay the host and the
// other tenant's operator cannot purge or admit a's device; 45 senders
// spread over the three relays to a's two devices get exactly as many
// queued answers as a's queued bytes hold, while b's are all queued; a's
// signed usage, read at another relay, counts them and verifies, and a
// changed copy does not; and quotas the host sets at one relay hold at
// the others at once.
func TestTwoTenantsOnTheCluster(t *testing.T) {
	w, relays := newClusterWorld(t, `{"devices":3,"queuedBytes":6000}`)
	var wg sync.WaitGroup
	devsA := make([]*did.PrivateKey, 8)
	for i := range devsA {
		wg.Add(1)
		go func() { defer wg.Done(); devsA[i] = w.enrolAt(t, "ownerA", relays[i%3].URL) }()
	}
	wg.Wait()
	devB := w.enrolAt(t, "ownerB", relays[2].URL)
	var inA []*did.PrivateKey
	for _, d := range devsA {
		if ownerOf(t, w, relays[0], d) {
			inA = append(inA, d)
		}
	}
	if len(inA) != 3 {
		t.Fatalf("%d of a's 8 devices in the tenant, want exactly its quota of 3", len(inA))
	}
	for i, r := range relays {
		w.relay = r
		t.Run("relay"+string(rune('1'+i)), func(t *testing.T) {
			checkFleet(t, w, inA, devB)
			checkClusterScoping(t, w, inA[0], devB)
		})
	}
	checkClusterQueuedBytes(t, w, relays, inA[1:], devB)
	checkHostSetsQuotas(t, w, relays)
}

// checkHostSetsQuotas: the host sets b's devices quota to its one device
// with torporctl tenant set at relay 1; relay 3 lists the new quota, no
// relay restarted, and b's second device, enrolling at relay 2, is not
// taken into the tenant. b's operator cannot set quotas.
func checkHostSetsQuotas(t *testing.T, w *world, relays []*relaytest.Relay) {
	b := w.keys["ownerB"].DID().String()
	w.ok(t, "tenant", "set", "--relay", relays[0].URL, "--key", w.files["host"], "--tenant", b, "--quotas", `{"devices":1}`)
	var list struct {
		Tenants []struct {
			Owner  string         `json:"owner"`
			Quotas tenancy.Quotas `json:"quotas"`
		} `json:"tenants"`
	}
	if err := json.Unmarshal([]byte(w.ok(t, "tenant", "list", "--relay", relays[2].URL, "--key", w.files["host"])), &list); err != nil {
		t.Fatal(err)
	}
	for _, x := range list.Tenants {
		if x.Owner == b && x.Quotas != (tenancy.Quotas{Devices: 1}) {
			t.Errorf("relay 3 lists b's quotas %+v, want the host's devices 1", x.Quotas)
		}
	}
	dev := w.enrolAt(t, "ownerB", relays[1].URL)
	if _, ok := w.ctl1(t, "queue", "list", "--relay", relays[1].URL, "--key", w.files["opB"], "--agent", dev.DID().String()); ok {
		t.Error("b's second device was taken into b's tenant past the devices quota the host set")
	}
	if out, ok := w.ctl1(t, "tenant", "set", "--relay", relays[0].URL, "--key", w.files["opB"], "--tenant", b, "--quotas", `{}`); ok {
		t.Errorf("b's operator set b's quotas: %s", out)
	}
}

// newClusterWorld starts a 3-node cluster in the test process and three
// torpor-relay processes on it with the same --tenants file (tenant a's
// quotas quotasA, JSON) and the flags extra, and uploads
// the owners' operator lists at relay 1.
func newClusterWorld(t *testing.T, quotasA string, extra ...string) (*world, []*relaytest.Relay) {
	w, tf := newKeys(t, quotasA, `{}`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns, err := jsserver.StartCluster(ctx, t.TempDir(), 3, jsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown(ns) })
	var relays []*relaytest.Relay
	for i := range 3 {
		urls := ns[i].URL() + "," + ns[(i+1)%3].URL() + "," + ns[(i+2)%3].URL()
		args := []string{"--store", "jetstream", "--nats", urls,
			"--tenants", tf, "--usage-key", w.files["usage"], "--operator", w.keys["host"].DID().String()}
		relays = append(relays, relaytest.Start(t, t.TempDir(), append(args, extra...)...))
	}
	w.ok(t, "tenant", "operators", "--upload", "--relay", relays[0].URL, "--key", w.files["ownerA"], w.keys["opA"].DID().String())
	w.ok(t, "tenant", "operators", "--upload", "--relay", relays[0].URL, "--key", w.files["ownerB"], w.keys["opB"].DID().String())
	return w, relays
}

// ownerOf reports whether a's operator may list dev's queue at r: whether
// dev is in tenant a.
func ownerOf(t *testing.T, w *world, r *relaytest.Relay, dev *did.PrivateKey) bool {
	_, ok := w.ctl1(t, "queue", "list", "--relay", r.URL, "--key", w.files["opA"], "--agent", dev.DID().String())
	return ok
}

// checkClusterScoping: at w.relay, the host and b's operator can neither
// list, purge nor admit a's device, nor a's operator b's; nothing is
// removed.
func checkClusterScoping(t *testing.T, w *world, devA, devB *did.PrivateKey) {
	sender, _ := did.Generate(nil)
	if a := relaytest.Send(w.relay.URL, devA.DID(), sender, "sc"+strings.TrimPrefix(w.relay.URL, "http://127.0.0.1:"), "x"); a.Status != 503 || !a.Queued {
		t.Fatalf("send to a's device: %+v", a)
	}
	before, err := relaytest.Count(w.relay.URL, devA)
	if err != nil {
		t.Fatal(err)
	}
	checkOutOfScopeRefused(t, w, devA, devB)
	if n, err := relaytest.Count(w.relay.URL, devA); err != nil || n != before {
		t.Fatalf("a's device holds %d records (%v) after refused purges, want %d", n, err, before)
	}
	w.ok(t, "queue", "purge", "--relay", w.relay.URL, "--key", w.files["opA"], "--agent", devA.DID().String(), "--all")
	if n, err := relaytest.Count(w.relay.URL, devA); err != nil || n != 0 {
		t.Errorf("a's device holds %d records (%v) after its operator's purge", n, err)
	}
}

// clusterBurst sends n requests at once to the devices devs, spread over
// the relays, each from its own sender with a body of one size, and
// returns how many were answered queued and the statuses.
func clusterBurst(relays []*relaytest.Relay, devs []*did.PrivateKey, n int, id string) (queued int, statuses map[int]int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	statuses = map[int]int{}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sender, _ := did.Generate(nil)
			a := relaytest.Send(relays[i%3].URL, devs[i%len(devs)].DID(), sender, id+string(rune('a'+i%26))+string(rune('a'+i/26)), clusterPad)
			mu.Lock()
			defer mu.Unlock()
			statuses[a.Status]++
			if a.Queued {
				queued++
			}
		}()
	}
	wg.Wait()
	return queued, statuses
}

// tenantList is torporctl tenant list's answer, by owner DID.
func tenantList(t *testing.T, w *world, url string) map[string]struct{ Devices, QueuedBytes int64 } {
	var list struct {
		Tenants []struct {
			Owner       string `json:"owner"`
			Devices     int64  `json:"devices"`
			QueuedBytes int64  `json:"queuedBytes"`
		} `json:"tenants"`
	}
	out := w.ok(t, "tenant", "list", "--relay", url, "--key", w.files["host"])
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("torporctl tenant list: %v: %s", err, out)
	}
	m := map[string]struct{ Devices, QueuedBytes int64 }{}
	for _, x := range list.Tenants {
		m[x.Owner] = struct{ Devices, QueuedBytes int64 }{x.Devices, x.QueuedBytes}
	}
	return m
}

// checkClusterQueuedBytes: one message to b's device gives the size of
// one record; then 45 senders over the three relays to a's two devices
// get exactly as many queued answers as a's 6000 bytes hold (the rest
// 507), b's 15 are all queued, every relay shows a within its quota, and
// a's usage read at relay 2 counts every request and refusal.
func checkClusterQueuedBytes(t *testing.T, w *world, relays []*relaytest.Relay, devsA []*did.PrivateKey, devB *did.PrivateKey) {
	a, b := w.keys["ownerA"].DID().String(), w.keys["ownerB"].DID().String()
	sender, _ := did.Generate(nil)
	// An id of 4 bytes, as the bursts' are: records of one size.
	if ans := relaytest.Send(relays[0].URL, devB.DID(), sender, "prob", clusterPad); !ans.Queued {
		t.Fatalf("probe to b's device: %+v", ans)
	}
	size := tenantList(t, w, relays[0].URL)[b].QueuedBytes
	if size <= 0 || size > clusterQueuedBytes/2 {
		t.Fatalf("one record of the burst holds %d bytes", size)
	}
	queued, st := clusterBurst(relays, devsA, 45, "qa")
	want := int(clusterQueuedBytes / size)
	t.Logf("a record holds %d bytes; a's burst: %d queued, answers %v", size, queued, st)
	if queued != want || st[503] != want || st[507] != 45-want {
		t.Errorf("tenant a's burst over 3 relays: %d queued (answers %v); want exactly %d (%d bytes of %d each) and %d 507", queued, st, want, clusterQueuedBytes, size, 45-want)
	}
	if qb, stb := clusterBurst(relays, []*did.PrivateKey{devB}, 15, "qb"); qb != 15 {
		t.Errorf("tenant b's burst: %d of 15 queued (%v)", qb, stb)
	}
	for i, r := range relays {
		if got := tenantList(t, w, r.URL)[a]; got.QueuedBytes != int64(queued)*size || got.QueuedBytes > clusterQueuedBytes || got.Devices != 3 {
			t.Errorf("relay %d lists a with %+v, want 3 devices and %d bytes", i+1, got, int64(queued)*size)
		}
	}
	checkClusterUsage(t, w, relays[1], 3+45, int64(45-want))
}

// checkClusterUsage reads a's usage at r until it counts requests requests
// and refused queued_bytes refusals, verifies it offline and checks that
// a changed copy fails.
func checkClusterUsage(t *testing.T, w *world, r *relaytest.Relay, requests, refused int64) {
	out := awaitUsage(t, w, r, tenancy.QuotaQueuedBytes, requests, refused)
	f := filepath.Join(w.dir, "cluster-usage.json")
	os.WriteFile(f, []byte(out), 0o600)
	w.ok(t, "tenant", "usage", "--verify", "--relay-did", w.keys["usage"].DID().String(), f)
	os.WriteFile(f, []byte(strings.Replace(out, `"requests":`, `"requests":1`, 1)), 0o600)
	if out, ok := w.ctl1(t, "tenant", "usage", "--verify", "--relay-did", w.keys["usage"].DID().String(), f); ok || !strings.Contains(out, "FAILED") {
		t.Errorf("a changed usage record: ok=%v %s", ok, out)
	}
}

// TestRateQuotaOnTheCluster: tenant a has 5 requests per second for the
// fleet. 40 senders at once, spread over the three relays, to a's device
// get at most 5 queued answers in each second of the burst (relays
// counting apart would serve up to 15 a second) and 429 for the rest; a's
// usage, read at relay 3, counts exactly the queued answers as requests
// and the 429s as refusals.
func TestRateQuotaOnTheCluster(t *testing.T) {
	w, relays := newClusterWorld(t, `{"requestsPerSecond":5}`)
	dev := w.enrolAt(t, "ownerA", relays[0].URL)
	if !ownerOf(t, w, relays[1], dev) {
		t.Fatal("a's device is not in tenant a")
	}
	start := time.Now()
	queued, st := clusterBurst(relays, []*did.PrivateKey{dev}, 40, "ra")
	seconds := int(time.Now().Unix()-start.Unix()) + 1
	t.Logf("the burst spans %d second(s): %d queued, answers %v", seconds, queued, st)
	if queued < 1 || queued > 5*seconds || st[503] != queued || st[429] != 40-queued {
		t.Fatalf("tenant a's burst over 3 relays in %d second(s): %d queued (answers %v); want 1 to %d queued and the rest 429", seconds, queued, st, 5*seconds)
	}
	awaitUsage(t, w, relays[2], tenancy.QuotaRequests, int64(queued), int64(40-queued))
}

// awaitUsage reads a's usage of this hour at r as a's operator until it
// counts requests requests and refused refusals of quota (each relay
// writes its counts every 5 s), and returns the record as torporctl
// printed it.
func awaitUsage(t *testing.T, w *world, r *relaytest.Relay, quota tenancy.Quota, requests, refused int64) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := w.ok(t, "tenant", "usage", "--relay", r.URL, "--key", w.files["opA"], "--tenant", w.keys["ownerA"].DID().String())
		var rec tenancy.Record
		if err := json.Unmarshal([]byte(out), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Requests == requests && rec.Refused[quota] == refused {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage at %s: %d requests, %v refused; want %d and %d %s", r.URL, rec.Requests, rec.Refused, requests, refused, quota)
		}
		time.Sleep(500 * time.Millisecond) // the relays' next write of their counts
	}
}
