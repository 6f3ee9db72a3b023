package updaterepo_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"testing"

	"github.com/torpor-dev/torpor/store/updaterepo"
)

// tenantEnv is owner's repository beside e's (Repo.Tenant of repo), with
// the owner's own root and targets keys and a root naming e's relay keys.
func (e *env) tenantEnv(repo *updaterepo.Repo, owner string) *env {
	t := e.t
	te := &env{t: t, clk: e.clk, rootKey: key(t), targetsKey: key(t), snapKey: e.snapKey, tsKey: e.tsKey,
		opener: e.opener, maxBytes: e.maxBytes}
	te.firstRoot()
	var err error
	if te.repo, err = repo.Tenant(owner); err != nil {
		t.Fatal(err)
	}
	if err := te.repo.SetRoot(te.rootBytes); err != nil {
		t.Fatal(err)
	}
	return te
}

func sumOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestTenantRepositoriesApart: the relay's repository and two tenants'
// in one store hold and serve each its own files: a device of each gets
// its own owner's build, a blob uploaded to one is in no other, each
// counts its own blob bytes, and all of it is there after a reopen (the
// same file again, or a new connection: another relay).
func TestTenantRepositoriesApart(t *testing.T) {
	eachBackend(t, func(t *testing.T, open opener) {
		host := newEnv(t, open, 0)
		a := host.tenantEnv(host.repo, "did:key:z6MkTenantA")
		b := host.tenantEnv(host.repo, "did:key:z6MkTenantB")
		hb, ab := build(200_000, 1), build(300_000, 2)
		if err := host.publish("torpor-agent/2/linux-armv6", hb, 2); err != nil {
			t.Fatal(err)
		}
		if err := a.publish("torpor-agent/3/linux-armv6", ab, 3); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			e    *env
			want []byte
		}{{"host", host, hb}, {"tenant a", a, ab}} {
			res, err := c.e.device().Check(context.Background())
			if err != nil {
				t.Fatalf("%s's device: %v", c.name, err)
			}
			if got, _ := os.ReadFile(res.Path); string(got) != string(c.want) {
				t.Errorf("%s's device got %d bytes of %s; want its own %d", c.name, len(got), res.Target, len(c.want))
			}
		}
		checkApart(t, host, a, b, hb, ab)
		host.repo.Close()
		host.open()
		other, err := host.repo.Tenant("did:key:z6MkTenantA")
		if err != nil {
			t.Fatal(err)
		}
		a.deviceDir = ""
		res, err := a.deviceOf(other).Check(context.Background())
		if got, _ := os.ReadFile(res.Path); err != nil || string(got) != string(ab) {
			t.Errorf("a's device after a reopen: %d bytes, %v; want a's build", len(got), err)
		}
	})
}

// checkApart checks that no repository holds another's blob, and that
// each counts its own blob bytes: the host's hb, a's ab, b's none.
func checkApart(t *testing.T, host, a, b *env, hb, ab []byte) {
	t.Helper()
	holds := []struct {
		name string
		r    *updaterepo.Repo
		sha  string
		want bool
	}{
		{"host holds a's", host.repo, sumOf(ab), false}, {"a holds the host's", a.repo, sumOf(hb), false},
		{"b holds a's", b.repo, sumOf(ab), false}, {"a holds its own", a.repo, sumOf(ab), true},
	}
	for _, h := range holds {
		if got, err := h.r.Holds(h.sha); got != h.want || err != nil {
			t.Errorf("%s: Holds = %v, %v; want %v", h.name, got, err, h.want)
		}
	}
	if _, err := b.repo.Metadata("timestamp.json", 1<<20); !errors.Is(err, updaterepo.ErrNotFound) {
		t.Errorf("b's timestamp, b having published nothing: %v; want ErrNotFound", err)
	}
	for _, c := range []struct {
		name string
		r    *updaterepo.Repo
		want int64
	}{{"host", host.repo, int64(len(hb))}, {"a", a.repo, int64(len(ab))}, {"b", b.repo, 0}} {
		if got, err := c.r.BlobBytes(); got != c.want || err != nil {
			t.Errorf("%s: BlobBytes = %d, %v; want %d", c.name, got, err, c.want)
		}
	}
}
