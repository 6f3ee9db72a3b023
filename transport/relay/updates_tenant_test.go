package relay

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/internal/tufsign"
	"github.com/torpor-dev/torpor/store/updaterepo"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

// tufOwner is a tenant owner's TUF keys and signed files: a root naming
// the relay's online keys and targets listing blob.
type tufOwner struct {
	root, targets, blob []byte
}

func newTUFOwner(t testing.TB, snap, ts ed25519.PublicKey, blob []byte) tufOwner {
	rootPub, rootKey, _ := ed25519.GenerateKey(nil)
	tgPub, tgKey, _ := ed25519.GenerateKey(nil)
	root, err := tufsign.NewRoot(tufsign.Roles{Root: []ed25519.PublicKey{rootPub}, RootThreshold: 1,
		Targets: []ed25519.PublicKey{tgPub}, TargetsThreshold: 1, Snapshot: snap, Timestamp: ts}, t0.AddDate(1, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	o := tufOwner{blob: blob}
	o.root, _ = tufsign.Sign(root, rootKey)
	targets := metadata.Targets(t0.AddDate(0, 3, 0))
	tufsign.AddTarget(targets, "agent", blob, "torpor", map[string]any{"version": 2, "goarch": "arm"})
	targets.Signed.Version++
	o.targets, _ = tufsign.Sign(targets, tgKey)
	return o
}

// newTenantUpdates is a tenant harness whose relay hosts an update
// repository in a bbolt file; it returns the relay's online public keys.
func newTenantUpdates(t testing.TB, qa tenancy.Quotas, mods ...func(*Config)) (*tenantHarness, ed25519.PublicKey, ed25519.PublicKey) {
	snapPub, snap, _ := ed25519.GenerateKey(nil)
	tsPub, ts, _ := ed25519.GenerateKey(nil)
	th := newTenantHarness(t, qa, append(mods, func(c *Config) {
		repo, err := updaterepo.Open(updaterepo.Config{Path: filepath.Join(t.TempDir(), "updates.db"),
			Snapshot: snap, Timestamp: ts, Clock: c.Clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { repo.Close() })
		c.Stores.Updates = repo
	})...)
	return th, snapPub, tsPub
}

func (th *tenantHarness) api(k *did.PrivateKey) *operatorapi.Client {
	return &operatorapi.Client{Origin: th.relay.cfg.PublicURL, Key: k, Clock: th.clk}
}

// linkedTimestamp is the timestamp.json a linked device of dev reads, or
// the link's error.
func linkedTimestamp(t *testing.T, c *link.Client) (int64, error) {
	b, err := c.Update(context.Background(), wire.UpdateRequest{Kind: wire.UpdateMeta, Name: "timestamp.json", Max: 16 << 10})
	if err != nil {
		return 0, err
	}
	m, err := metadata.Timestamp().FromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	return m.Signed.Version, nil
}

// TestTenantsUpdateRepositories: each tenant's operators upload its
// owner's root, blobs and targets to the tenant's own repository; another
// tenant's operator and the relay's own operators are refused there (403
// not_tenant_operator), a tenant's operator is refused on the relay's own
// repository, and each tenant's device reads its tenant's repository and
// no other: b's device, b having published nothing, finds no timestamp.
func TestTenantsUpdateRepositories(t *testing.T) {
	th, snap, ts := newTenantUpdates(t, tenancy.Quotas{})
	ctx := context.Background()
	a := newTUFOwner(t, snap, ts, []byte("tenant a's build"))
	owner := th.a.DID().String()
	for _, c := range []struct {
		name string
		k    *did.PrivateKey
		want string
	}{{"b's operator", th.opB, "403"}, {"the host", th.host, "403"}, {"a stranger", didtest.Key(t, 89), "403"}} {
		if _, err := th.api(c.k).PutTenantUpdate(ctx, owner, "root", a.root); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s uploads to a's repository: %v; want %s", c.name, err, c.want)
		}
	}
	if _, err := th.api(th.opA).PutUpdate(ctx, "root", a.root); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("a's operator uploads to the relay's own repository: %v; want 403", err)
	}
	for _, up := range []struct {
		what string
		body []byte
	}{{"root", a.root}, {"blob", a.blob}, {"targets", a.targets}} {
		if _, err := th.api(th.opA).PutTenantUpdate(ctx, owner, up.what, up.body); err != nil {
			t.Fatalf("a's operator uploads %s: %v", up.what, err)
		}
	}
	devA, devB, loose := didtest.Key(t, 70), didtest.Key(t, 72), didtest.Key(t, 73)
	if !th.enrolled(t, th.a, devA) || !th.enrolled(t, th.b, devB) {
		t.Fatal("enrolment failed")
	}
	if v, err := linkedTimestamp(t, th.dial(t, devA)); err != nil || v != 1 {
		t.Errorf("a's device reads timestamp version %d, %v; want a's, version 1", v, err)
	}
	var le *wire.RemoteError
	for name, k := range map[string]*did.PrivateKey{"b's device": devB, "a device in no tenant": loose} {
		if _, err := linkedTimestamp(t, th.dial(t, k)); !errors.As(err, &le) || le.Code != wire.CodeUpdateNotFound {
			t.Errorf("%s reads a timestamp: %v; want %s (a's is not its repository)", name, err, wire.CodeUpdateNotFound)
		}
	}
}

// TestTenantsDefaultTenantKeepsTheRelaysRepository: on a single-owner
// relay made a hosted one (its --owner named in --tenants), the owner's
// tenant keeps the relay's own repository: what the relay's operators
// publish there as before is what the tenant's devices read, and the
// host's list counts its bytes as the tenant's; another tenant's device
// does not read it.
func TestTenantsDefaultTenantKeepsTheRelaysRepository(t *testing.T) {
	owners := []did.DID{didtest.Key(t, 60).DID()} // tenant a's owner (newTenantHarness)
	th, snap, ts := newTenantUpdates(t, tenancy.Quotas{}, func(c *Config) { c.Access.Owners = owners })
	if th.a.DID() != owners[0] {
		t.Fatal("tenant a is not the relay's owner")
	}
	ctx := context.Background()
	o := newTUFOwner(t, snap, ts, []byte("the single owner's build"))
	for _, up := range []struct {
		what string
		body []byte
	}{{"root", o.root}, {"blob", o.blob}, {"targets", o.targets}} {
		if _, err := th.api(th.host).PutUpdate(ctx, up.what, up.body); err != nil {
			t.Fatalf("the relay's operator uploads %s: %v", up.what, err)
		}
	}
	devA, devB := didtest.Key(t, 70), didtest.Key(t, 72)
	if !th.enrolled(t, th.a, devA) || !th.enrolled(t, th.b, devB) {
		t.Fatal("enrolment failed")
	}
	if v, err := linkedTimestamp(t, th.dial(t, devA)); err != nil || v != 1 {
		t.Errorf("the default tenant's device reads timestamp version %d, %v; want the relay's, version 1", v, err)
	}
	var le *wire.RemoteError
	if _, err := linkedTimestamp(t, th.dial(t, devB)); !errors.As(err, &le) || le.Code != wire.CodeUpdateNotFound {
		t.Errorf("b's device reads a timestamp: %v; want %s", err, wire.CodeUpdateNotFound)
	}
	for _, tt := range th.tenantList(t) {
		if want := map[bool]int64{true: int64(len(o.blob))}[tt.Owner == th.a.DID().String()]; tt.UpdateBytes != want {
			t.Errorf("tenant %s holds %d update bytes in the list; want %d", tt.Owner, tt.UpdateBytes, want)
		}
	}
}

// TestTenantsUpdateBytesExactUnderConcurrentUploads: 10 of tenant a's
// blobs of 300 bytes uploaded at once against its update_bytes quota of
// 1000: exactly 3 are taken, the other 7 refused 507 tenant_quota naming
// update_bytes and counted; a blob already held is taken again when the
// tenant is full (it takes no room); tenant b's 10 are all taken; the
// host's list shows what each holds.
func TestTenantsUpdateBytesExactUnderConcurrentUploads(t *testing.T) {
	th, _, _ := newTenantUpdates(t, tenancy.Quotas{UpdateBytes: 1000})
	ctx := context.Background()
	blob := func(tenant, i int) []byte {
		return []byte(fmt.Sprintf("%d/%d %s", tenant, i, strings.Repeat("x", 300))[:300])
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	got := map[string]int{}
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := th.api(th.opA).PutTenantUpdate(ctx, th.a.DID().String(), "blob", blob(0, i))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				got["taken"]++
			case strings.Contains(err.Error(), "507") && strings.Contains(err.Error(), "tenant_quota") && strings.Contains(err.Error(), "update_bytes") && strings.Contains(err.Error(), th.a.DID().String()):
				got["refused"]++
			default:
				t.Errorf("upload %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if got["taken"] != 3 || got["refused"] != 7 {
		t.Fatalf("tenant a: %v; want 3 taken and 7 refused (507)", got)
	}
	held := 0
	for i := range 10 {
		if _, err := th.api(th.opA).PutTenantUpdate(ctx, th.a.DID().String(), "blob", blob(0, i)); err == nil {
			held++
		}
	}
	if held != 3 {
		t.Errorf("a's blobs again, a full: %d taken; want the 3 it holds", held)
	}
	for i := range 10 {
		if _, err := th.api(th.opB).PutTenantUpdate(ctx, th.b.DID().String(), "blob", blob(1, i)); err != nil {
			t.Fatalf("tenant b's blob %d: %v", i, err)
		}
	}
	if n := labelledCounter(t, th.relay, "torpor_relay_tenant_refusals_total", map[string]string{"tenant": th.a.DID().String(), "quota": "update_bytes"}); n != 14 {
		t.Errorf("update_bytes refusals counted %v; want 14 (7, then the same 7 again)", n)
	}
	want := map[string]int64{th.a.DID().String(): 900, th.b.DID().String(): 3000}
	for _, tt := range th.tenantList(t) {
		if tt.UpdateBytes != want[tt.Owner] {
			t.Errorf("tenant %s holds %d update bytes in the list; want %d", tt.Owner, tt.UpdateBytes, want[tt.Owner])
		}
	}
}

// tenantList is GET /operator/tenants as the host.
func (th *tenantHarness) tenantList(t *testing.T) []operatorapi.Tenant {
	t.Helper()
	req, _ := http.NewRequest("GET", th.srv.URL+"/operator/tenants", nil)
	tok, _ := bearer.IssuePurpose(th.host, th.relay.cfg.PublicURL, bearer.OperatorPurpose("GET", "/operator/tenants"), th.clk.Now(), bearer.OperatorTTL)
	req.Header.Set("Authorization", bearer.Authorization(tok))
	r := th.do(t, req)
	var body operatorapi.TenantList
	if err := json.Unmarshal(r.body, &body); r.status != 200 || err != nil {
		t.Fatalf("the host's list: %d %s", r.status, r.body)
	}
	return body.Tenants
}
