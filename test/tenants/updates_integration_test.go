//go:build integration

package tenants

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// TestTenantsUpdateRepositories: a hosted relay with an update
// repository, tenant a with an update_bytes quota of 5000 bytes, b with
// none. Each tenant's operator publishes its owner's signed build with
// torporctl update publish --tenant; a's second build (another 3000
// bytes) is refused 507 naming the tenant and update_bytes, while b
// publishes two such builds; b's operator and the host (not named by a's
// owner, and without a's key) cannot upload to a's repository, nor a's
// operator to the relay's own; a makes room by removing its old build
// (checkRemoveAndReplace) and then publishes its second; each tenant's
// device reads its own tenant's targets over its link and not the
// other's.
func TestTenantsUpdateRepositories(t *testing.T) {
	online := onlineKeys(t)
	w := newHostedWorld(t, `{"updateBytes":5000}`, `{}`, online.flags()...)
	ownerDir := func(owner string) string {
		d := filepath.Join(w.dir, "tuf-"+owner)
		w.ok(t, "update", "keys", "init", "--dir", d, "--relay-snapshot", online.snapshot.DID().String(), "--relay-timestamp", online.timestamp.DID().String())
		return d
	}
	dirA, dirB := ownerDir("a"), ownerDir("b")
	w.sign(t, dirA, "tenant-a-build/2", 2)
	w.sign(t, dirB, "tenant-b-build/2", 2)
	w.sign(t, dirB, "tenant-b-build/3", 3)
	a, b := w.keys["ownerA"].DID().String(), w.keys["ownerB"].DID().String()
	publish := func(dir, key, tenant string) (string, bool) {
		args := []string{"update", "publish", "--dir", dir, "--relay", w.relay.URL, "--key", w.files[key]}
		if tenant != "" {
			args = append(args, "--tenant", tenant)
		}
		return w.ctl1(t, args...)
	}
	for _, c := range []struct{ name, key, tenant, want string }{ // each refused at its first upload, the root
		{"b's operator to a's repository", "opB", a, "not_tenant_operator"},
		{"the host to a's repository", "host", a, "not_tenant_operator"},
		{"a's operator to the relay's own", "opA", "", "not_operator"},
	} {
		if out, ok := publish(dirA, c.key, c.tenant); ok || !strings.Contains(out, "403") || !strings.Contains(out, c.want) {
			t.Errorf("%s: ok=%v %s; want 403 %s", c.name, ok, out, c.want)
		}
	}
	w.ok(t, "update", "publish", "--dir", dirA, "--relay", w.relay.URL, "--key", w.files["opA"], "--root", "1", "--tenant", a)
	w.sign(t, dirA, "tenant-a-build/3", 3)
	out, ok := publish(dirA, "opA", a)
	if ok || !strings.Contains(out, "507") || !strings.Contains(out, "tenant_quota") || !strings.Contains(out, "update_bytes") || !strings.Contains(out, a) {
		t.Errorf("a's second build past its 5000 bytes: ok=%v %s; want 507 tenant_quota naming a and update_bytes", ok, out)
	}
	checkRemoveAndReplace(t, w, dirA, a)
	w.ok(t, "update", "publish", "--dir", dirB, "--relay", w.relay.URL, "--key", w.files["opB"], "--root", "1", "--tenant", b)
	for _, c := range []struct {
		owner, mine, theirs string
	}{{"ownerA", "tenant-a-build/3", "tenant-b-build"}, {"ownerB", "tenant-b-build/3", "tenant-a-build"}} {
		targets := w.linkedTargets(t, w.enrol(t, c.owner))
		if !strings.Contains(targets, c.mine) || strings.Contains(targets, c.theirs) {
			t.Errorf("%s's device reads targets %s; want its own %s and nothing of %s", c.owner, targets, c.mine, c.theirs)
		}
		if c.owner == "ownerA" && strings.Contains(targets, "tenant-a-build/2") {
			t.Errorf("a's device reads targets %s; want no more of the build a dropped", targets)
		}
	}
}

// checkRemoveAndReplace: tenant a at its quota (build 2 held and named
// by its targets, build 3 refused) makes room as a TUF owner does. The
// named build's blob is refused removal (409 blob_named); the owner
// signs a targets version without either build (update drop-target),
// which a's operator publishes, then removes build 2's blob (update
// remove: its 3000 bytes given back, none left); build 3, signed again,
// is taken. a's usage record of the hour carries its peak update bytes,
// 3000 (never more: build 2 left before build 3 came), verifies offline
// and a copy with the figure changed does not.
func checkRemoveAndReplace(t *testing.T, w *world, dirA, a string) {
	t.Helper()
	sum := sha256.Sum256([]byte(strings.Repeat("tenant-a-build/2 ", 3000)[:3000]))
	sha2 := hex.EncodeToString(sum[:])
	remove := []string{"update", "remove", "--tenant", a, "--sha256", sha2, "--relay", w.relay.URL, "--key", w.files["opA"]}
	if out, ok := w.ctl1(t, remove...); ok || !strings.Contains(out, "409") || !strings.Contains(out, "blob_named") {
		t.Errorf("removing the build a's targets name: ok=%v %s; want 409 blob_named", ok, out)
	}
	out := w.ok(t, "update", "drop-target", "--dir", dirA, "--name", "tenant-a-build/2", "--name", "tenant-a-build/3")
	if !strings.Contains(out, "--sha256 "+sha2) {
		t.Errorf("drop-target printed %q; want --sha256 %s", out, sha2)
	}
	w.ok(t, "update", "publish", "--dir", dirA, "--relay", w.relay.URL, "--key", w.files["opA"], "--tenant", a)
	if out := w.ok(t, remove...); !strings.Contains(out, "removed blob "+sha2+" (3000 bytes); the tenant's repository holds 0 blob bytes") {
		t.Errorf("update remove printed %q", out)
	}
	w.sign(t, dirA, "tenant-a-build/3", 3)
	w.ok(t, "update", "publish", "--dir", dirA, "--relay", w.relay.URL, "--key", w.files["opA"], "--tenant", a)
	out = w.ok(t, "tenant", "usage", "--relay", w.relay.URL, "--key", w.files["opA"], "--tenant", a)
	var r tenancy.Record
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.PeakUpdateBytes == nil || *r.PeakUpdateBytes != 3000 {
		t.Errorf("a's usage record %s (%v); want peakUpdateBytes 3000", out, err)
	}
	f := filepath.Join(w.dir, "usage-update-bytes.json")
	os.WriteFile(f, []byte(out), 0o600)
	if out := w.ok(t, "tenant", "usage", "--verify", "--relay-did", w.keys["usage"].DID().String(), f); !strings.Contains(out, "3000 peak update bytes") {
		t.Errorf("usage --verify printed %q; want its 3000 peak update bytes", out)
	}
	os.WriteFile(f, []byte(strings.Replace(out, `"peakUpdateBytes":3000`, `"peakUpdateBytes":300`, 1)), 0o600)
	if out, ok := w.ctl1(t, "tenant", "usage", "--verify", "--relay-did", w.keys["usage"].DID().String(), f); ok || !strings.Contains(out, "FAILED") {
		t.Errorf("a usage record with its update bytes changed: ok=%v %s", ok, out)
	}
}

// sign signs a build of 3000 bytes as target name, version v, in the
// owner's update directory dir.
func (w *world) sign(t *testing.T, dir, name string, v int) {
	t.Helper()
	build := filepath.Join(dir, strings.ReplaceAll(name, "/", "-")+".bin")
	body := []byte(strings.Repeat(name+" ", 3000)[:3000])
	if err := os.WriteFile(build, body, 0o600); err != nil {
		t.Fatal(err)
	}
	w.ok(t, "update", "sign-target", "--dir", dir, "--name", name, "--version", string(rune('0'+v)), "--goarch", "arm", "--goarm", "6", build)
}

// linkedTargets is the current targets metadata dev reads over its link.
func (w *world) linkedTargets(t *testing.T, dev *did.PrivateKey) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := link.Dial(ctx, link.Config{RelayURL: w.relay.URL, Key: dev})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := c.Update(ctx, wire.UpdateRequest{Kind: wire.UpdateMeta, Name: "targets.json", Max: 1 << 20})
	if err != nil {
		t.Fatalf("%s reads targets.json: %v", dev.DID(), err)
	}
	return string(b)
}

// TestUpdateBytesOnTheCluster: three relays on a 3-node JetStream cluster
// sharing the update repositories and the ledger, tenant a's update_bytes
// quota 5000: 15 of a's blobs of 1000 bytes uploaded at once, spread over
// the three relays, are exactly 5 taken and 10 refused 507 tenant_quota
// naming update_bytes (relays counting apart would take up to 15); b's 15
// are all taken; every relay's host list shows a with 5000 bytes and b
// with 15000. Then a's removals race new uploads
// (checkRemovalsOnTheCluster).
func TestUpdateBytesOnTheCluster(t *testing.T) {
	w, relays := newClusterWorld(t, `{"updateBytes":5000}`, onlineKeys(t).flags()...)
	for tenant, want := range map[string][2]int{"ownerA": {5, 10}, "ownerB": {15, 0}} {
		op := map[string]string{"ownerA": "opA", "ownerB": "opB"}[tenant]
		got := uploadBurst(t, w, relays, op, w.keys[tenant].DID().String(), 0, 15)
		if got[200] != want[0] || got[507] != want[1] {
			t.Errorf("%s's 15 blobs over three relays: %v; want %d taken and %d refused (507)", tenant, got, want[0], want[1])
		}
	}
	checkUpdateBytesListed(t, w, relays, 5000, 15000)
	checkRemovalsOnTheCluster(t, w, relays)
}

// checkUpdateBytesListed checks that every relay's host list shows a
// with a and b with b update bytes.
func checkUpdateBytesListed(t *testing.T, w *world, relays []*relaytest.Relay, a, b int64) {
	t.Helper()
	for i, r := range relays {
		var list struct {
			Tenants []struct {
				Owner       string `json:"owner"`
				UpdateBytes int64  `json:"updateBytes"`
			} `json:"tenants"`
		}
		json.Unmarshal([]byte(w.ok(t, "tenant", "list", "--relay", r.URL, "--key", w.files["host"])), &list)
		want := map[string]int64{w.keys["ownerA"].DID().String(): a, w.keys["ownerB"].DID().String(): b}
		for _, tt := range list.Tenants {
			if tt.UpdateBytes != want[tt.Owner] {
				t.Errorf("relay %d lists %s with %d update bytes; want %d", i+1, tt.Owner, tt.UpdateBytes, want[tt.Owner])
			}
		}
	}
}

// checkRemovalsOnTheCluster: a's operator removes the 15 blobs of a's
// first burst, spread over the three relays, while 15 new blobs of a's
// are uploaded at once, spread too: exactly the 5 held are removed (the
// others 404 no_blob), the new ones taken never pass the 5000 bytes, and
// every relay lists a with exactly 1000 bytes per new blob taken. a's
// usage record, read at relay 2, carries the peak of 5000, verifies
// offline, and a copy with the figure changed does not.
func checkRemovalsOnTheCluster(t *testing.T, w *world, relays []*relaytest.Relay) {
	a := w.keys["ownerA"].DID().String()
	var removed, uploaded map[int]int
	var wg sync.WaitGroup
	wg.Go(func() { removed = removeBurst(t, w, relays, a, 15) })
	wg.Go(func() { uploaded = uploadBurst(t, w, relays, "opA", a, 100, 15) })
	wg.Wait()
	t.Logf("a's removals %v, uploads %v", removed, uploaded)
	if removed[200] != 5 || removed[404] != 10 {
		t.Errorf("a's 15 removals over three relays: %v; want the 5 held removed and 10 404", removed)
	}
	if taken := uploaded[200]; taken > 5 || uploaded[200]+uploaded[507] != 15 {
		t.Errorf("a's 15 uploads racing the removals: %v; want at most 5 taken, the rest 507", uploaded)
	}
	checkUpdateBytesListed(t, w, relays, int64(1000*uploaded[200]), 15000)
	out := w.ok(t, "tenant", "usage", "--relay", relays[1].URL, "--key", w.files["opA"], "--tenant", a)
	var r tenancy.Record
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.PeakUpdateBytes == nil || *r.PeakUpdateBytes != 5000 {
		t.Errorf("a's usage record %s (%v); want peakUpdateBytes 5000", out, err)
	}
	f := filepath.Join(w.dir, "cluster-update-bytes.json")
	os.WriteFile(f, []byte(out), 0o600)
	w.ok(t, "tenant", "usage", "--verify", "--relay-did", w.keys["usage"].DID().String(), f)
	os.WriteFile(f, []byte(strings.Replace(out, `"peakUpdateBytes":5000`, `"peakUpdateBytes":4000`, 1)), 0o600)
	if out, ok := w.ctl1(t, "tenant", "usage", "--verify", "--relay-did", w.keys["usage"].DID().String(), f); ok || !strings.Contains(out, "FAILED") {
		t.Errorf("a usage record with its update bytes changed: ok=%v %s", ok, out)
	}
}

// removeBurst removes a's blobs 0 to n-1 of uploadBurst at once as a's
// operator, the i-th through relay i%3, and counts the answers by status:
// 200 removed, 404 not held.
func removeBurst(t *testing.T, w *world, relays []*relaytest.Relay, tenant string, n int) map[int]int {
	return atOnce(0, n, func(ctx context.Context, i int) int {
		api := &operatorapi.Client{Origin: relays[i%3].URL, Key: w.keys["opA"]}
		sum := sha256.Sum256(burstBlob(tenant, i))
		_, err := api.RemoveTenantBlob(ctx, tenant, hex.EncodeToString(sum[:]))
		switch {
		case err == nil:
			return 200
		case strings.Contains(err.Error(), "404") && strings.Contains(err.Error(), "no_blob"):
			return 404
		}
		t.Errorf("removing blob %d: %v", i, err)
		return 0
	})
}

// atOnce runs call for i from from to from+n-1 at once, each with a minute
// to answer, and counts the statuses they return.
func atOnce(from, n int, call func(ctx context.Context, i int) int) map[int]int {
	var mu sync.Mutex
	var wg sync.WaitGroup
	got := map[int]int{}
	for i := from; i < from+n; i++ {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			status := call(ctx, i)
			mu.Lock()
			got[status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return got
}

// burstBlob is blob i of tenant's in uploadBurst: 1000 bytes.
func burstBlob(tenant string, i int) []byte {
	return []byte(fmt.Sprintf("%s %d %s", tenant, i, strings.Repeat("x", 1000))[:1000])
}

// uploadBurst uploads n blobs of 1000 bytes at once (burstBlob from to
// from+n-1) as operator op to the repository of tenant (an owner DID),
// the i-th through relay i%3, and counts the answers by status: 200
// taken, else the status the error names.
func uploadBurst(t *testing.T, w *world, relays []*relaytest.Relay, op, tenant string, from, n int) map[int]int {
	return atOnce(from, n, func(ctx context.Context, i int) int {
		api := &operatorapi.Client{Origin: relays[i%3].URL, Key: w.keys[op]}
		_, err := api.PutTenantUpdate(ctx, tenant, "blob", burstBlob(tenant, i))
		switch {
		case err == nil:
			return 200
		case strings.Contains(err.Error(), "507") && strings.Contains(err.Error(), "tenant_quota") && strings.Contains(err.Error(), "update_bytes"):
			return 507
		}
		t.Errorf("blob %d: %v", i, err)
		return 0
	})
}

// relayKeys are the relay's two online update keys (the snapshot's and the
// timestamp's) and their key files.
type relayKeys struct {
	snapshot, timestamp         *did.PrivateKey
	snapshotFile, timestampFile string
}

func onlineKeys(t *testing.T) relayKeys {
	t.Helper()
	var k relayKeys
	k.snapshot, k.timestamp = didtest.New(t), didtest.New(t)
	k.snapshotFile, k.timestampFile = testenv.KeyFile(t, k.snapshot), testenv.KeyFile(t, k.timestamp)
	return k
}

// flags are torpor-relay's flags naming the key files.
func (k relayKeys) flags() []string {
	return []string{"--update-snapshot-key", k.snapshotFile, "--update-timestamp-key", k.timestampFile}
}
