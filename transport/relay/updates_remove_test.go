package relay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

func shaOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestTenantsRemoveBlob: tenant a's operator uploads three blobs and
// targets naming one; removing the two others gives back exactly their
// bytes (the answer, the host's list); the named one is refused 409
// blob_named and stays; a removed one is 404 no_blob; the host and b's
// operator are refused 403 not_tenant_operator and remove nothing; the
// hour's signed usage record of a carries the peak of a's update bytes;
// every removal and refusal is in the audit log as update-remove.
func TestTenantsRemoveBlob(t *testing.T) {
	var al *audit.Bolt
	th, snap, ts := newTenantUpdates(t, tenancy.Quotas{}, func(c *Config) { al = auditLog(t, c) })
	ctx := context.Background()
	a := newTUFOwner(t, snap, ts, []byte(strings.Repeat("the named build ", 100)))
	owner := th.a.DID().String()
	b2, b3 := []byte(strings.Repeat("2", 700)), []byte(strings.Repeat("3", 900))
	for _, up := range []struct {
		what string
		body []byte
	}{{"root", a.root}, {"blob", b2}, {"blob", b3}, {"blob", a.blob}, {"targets", a.targets}} {
		if _, err := th.api(th.opA).PutTenantUpdate(ctx, owner, up.what, up.body); err != nil {
			t.Fatalf("a's operator uploads %s: %v", up.what, err)
		}
	}
	for name, k := range map[string]*did.PrivateKey{"the host": th.host, "b's operator": th.opB} {
		if _, err := th.api(k).RemoveTenantBlob(ctx, owner, shaOf(b2)); err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "not_tenant_operator") {
			t.Errorf("%s removes a's blob: %v; want 403 not_tenant_operator", name, err)
		}
	}
	left := int64(len(a.blob) + len(b2) + len(b3))
	for _, b := range [][]byte{b2, b3} {
		ans, err := th.api(th.opA).RemoveTenantBlob(ctx, owner, shaOf(b))
		left -= int64(len(b))
		if err != nil || ans.Removed != int64(len(b)) || ans.UpdateBytes != left || ans.SHA256 != shaOf(b) {
			t.Fatalf("a's operator removes a blob of %d bytes: %+v, %v; want %d removed, %d left", len(b), ans, err, len(b), left)
		}
	}
	_, err := th.api(th.opA).RemoveTenantBlob(ctx, owner, shaOf(a.blob))
	if err == nil || !strings.Contains(err.Error(), "409") || !strings.Contains(err.Error(), "blob_named") || !strings.Contains(err.Error(), `target "agent"`) {
		t.Errorf("removing the blob the targets name: %v; want 409 blob_named naming the target", err)
	}
	if _, err := th.api(th.opA).RemoveTenantBlob(ctx, owner, shaOf(b2)); err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "no_blob") {
		t.Errorf("removing a removed blob: %v; want 404 no_blob", err)
	}
	for _, tt := range th.tenantList(t) {
		if want := map[bool]int64{true: int64(len(a.blob))}[tt.Owner == owner]; tt.UpdateBytes != want {
			t.Errorf("tenant %s holds %d update bytes in the list; want %d", tt.Owner, tt.UpdateBytes, want)
		}
	}
	r, err := th.ledger.Usage(th.a.DID(), th.clk.Now(), didtest.Key(t, 65))
	if all := int64(len(a.blob) + len(b2) + len(b3)); err != nil || r.PeakUpdateBytes == nil || *r.PeakUpdateBytes != all {
		t.Errorf("a's usage record: %+v, %v; want peak update bytes %d", r, err, all)
	}
	if info, _ := th.ledger.Tenant(th.a.DID()); info.Held.UpdateBytes != int64(len(a.blob)) {
		t.Errorf("the ledger holds %d update bytes of a's; want %d", info.Held.UpdateBytes, len(a.blob))
	}
	if outcomes := auditOutcomes(t, al, audit.ActionUpdateRemove); outcomes[audit.OK] != 2 || outcomes[audit.Refused] != 4 {
		t.Errorf("update-remove audit records by outcome: %v; want 2 ok and 4 refused (host, b's operator, named, removed)", outcomes)
	}
}

// auditLog gives c an audit log in a bbolt file of the test's.
func auditLog(t *testing.T, c *Config) *audit.Bolt {
	al, err := audit.OpenBolt(filepath.Join(t.TempDir(), "audit.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { al.Close() })
	c.Stores.Audit = al
	return al
}

// auditOutcomes counts al's records of action by outcome.
func auditOutcomes(t *testing.T, al *audit.Bolt, action string) map[string]int {
	page, err := al.List(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]int{}
	for _, rec := range page.Records {
		if rec.Action == action {
			outcomes[rec.Outcome]++
		}
	}
	return outcomes
}

// TestTenantsRemoveBlobDefaultTenant: the default tenant keeps the
// relay's own repository, from which nothing is removed: 409
// host_repository, and the blob stays.
func TestTenantsRemoveBlobDefaultTenant(t *testing.T) {
	owners := []did.DID{didtest.Key(t, 60).DID()} // tenant a's owner (newTenantHarness)
	th, _, _ := newTenantUpdates(t, tenancy.Quotas{}, func(c *Config) { c.Access.Owners = owners })
	ctx := context.Background()
	blob := []byte("the relay's own blob")
	if _, err := th.api(th.host).PutUpdate(ctx, "blob", blob); err != nil {
		t.Fatal(err)
	}
	_, err := th.api(th.opA).RemoveTenantBlob(ctx, th.a.DID().String(), shaOf(blob))
	if err == nil || !strings.Contains(err.Error(), "409") || !strings.Contains(err.Error(), "host_repository") {
		t.Errorf("removing from the default tenant's repository: %v; want 409 host_repository", err)
	}
	if held, err := th.relay.cfg.Stores.Updates.(tenantRepo).Holds(shaOf(blob)); !held || err != nil {
		t.Errorf("the relay's blob held %v, %v; want it kept", held, err)
	}
}

// TestTenantsUpdateBytesExactUnderUploadsAndRemovals: tenant a, with an
// update_bytes quota of 1500, holds three blobs of 300 bytes; its
// operator removes them while 20 new blobs of 300 are uploaded at once.
// However they interleave, a never holds more than its quota: the blobs
// taken fit in it, the repository holds exactly the blobs taken (its
// count is the sum of their bytes, in the host's list too), and the
// usage record's peak is within the quota. It holds because uploads
// count under the tenant's lock (updateRoom); without the lock the
// uploads' counts race and more than 1500 bytes are taken.
func TestTenantsUpdateBytesExactUnderUploadsAndRemovals(t *testing.T) {
	th, _, _ := newTenantUpdates(t, tenancy.Quotas{UpdateBytes: 1500})
	ctx := context.Background()
	owner := th.a.DID().String()
	blob := func(i int) []byte { return []byte(fmt.Sprintf("%02d %s", i, strings.Repeat("x", 300))[:300]) }
	for i := range 3 {
		if _, err := th.api(th.opA).PutTenantUpdate(ctx, owner, "blob", blob(i)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken := []int{}
	start := make(chan struct{})
	for i := range 23 {
		wg.Go(func() {
			<-start
			if i < 3 {
				if _, err := th.api(th.opA).RemoveTenantBlob(ctx, owner, shaOf(blob(i))); err != nil {
					t.Errorf("removing blob %d: %v", i, err)
				}
				return
			}
			_, err := th.api(th.opA).PutTenantUpdate(ctx, owner, "blob", blob(i))
			switch {
			case err == nil:
				mu.Lock()
				taken = append(taken, i)
				mu.Unlock()
			case !strings.Contains(err.Error(), "507") || !strings.Contains(err.Error(), "update_bytes"):
				t.Errorf("upload %d: %v", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	repo, err := th.relay.tenantUpdates(th.a.DID())
	if err != nil {
		t.Fatal(err)
	}
	held, _ := repo.BlobBytes()
	if held > 1500 || held != int64(300*len(taken)) {
		t.Fatalf("a holds %d blob bytes with %d uploads taken (%v); want 300 each, within the quota of 1500", held, len(taken), taken)
	}
	for _, i := range taken {
		if ok, _ := repo.Holds(shaOf(blob(i))); !ok {
			t.Errorf("blob %d was taken and is not held", i)
		}
	}
	for _, tt := range th.tenantList(t) {
		if tt.Owner == owner && tt.UpdateBytes != held {
			t.Errorf("the host's list: a holds %d update bytes; want %d", tt.UpdateBytes, held)
		}
	}
	r, err := th.ledger.Usage(th.a.DID(), th.clk.Now(), didtest.Key(t, 65))
	if err != nil || r.PeakUpdateBytes == nil || *r.PeakUpdateBytes > 1500 {
		t.Errorf("a's usage record: %+v, %v; want a peak of update bytes within 1500", r, err)
	}
}

// TestTenantsSampledUpdateBytes: SampleTenants records a tenant's update
// bytes the ledger does not hold yet (a blob stored past the relay's
// endpoints), and carries what is held into the next hour's record, in
// which nothing was uploaded or removed.
func TestTenantsSampledUpdateBytes(t *testing.T) {
	th, _, _ := newTenantUpdates(t, tenancy.Quotas{})
	repo, err := th.relay.tenantUpdates(th.a.DID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.AddBlob(make([]byte, 700)); err != nil {
		t.Fatal(err)
	}
	ctx, key := context.Background(), didtest.Key(t, 65)
	if err := th.relay.SampleTenants(ctx); err != nil {
		t.Fatal(err)
	}
	if info, _ := th.ledger.Tenant(th.a.DID()); info.Held.UpdateBytes != 700 {
		t.Errorf("the ledger holds %d update bytes of a's after a sample; want 700", info.Held.UpdateBytes)
	}
	th.clk.Advance(time.Hour)
	next, err := th.ledger.Usage(th.a.DID(), th.clk.Now(), key)
	if err != nil || next.PeakUpdateBytes != nil {
		t.Fatalf("the next hour before a sample: %+v, %v; want no update bytes yet", next, err)
	}
	if err := th.relay.SampleTenants(ctx); err != nil {
		t.Fatal(err)
	}
	next, err = th.ledger.Usage(th.a.DID(), th.clk.Now(), key)
	if err != nil || next.PeakUpdateBytes == nil || *next.PeakUpdateBytes != 700 {
		t.Errorf("the next hour after a sample: %+v, %v; want peak update bytes 700", next, err)
	}
	if b, _ := th.ledger.Usage(th.b.DID(), th.clk.Now(), key); b.PeakUpdateBytes != nil {
		t.Errorf("tenant b's hour: %+v; want no update bytes", b)
	}
}
