package updaterepo_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/torpor-dev/torpor/store/updaterepo"
)

// TestRemoveBlob: a tenant's repository holds three blobs and its targets
// name one; removing the two others gives back exactly their bytes, the
// named one is refused (ErrNamed, naming the target) and stays, a removed
// blob is no longer held or served, the device still gets its target,
// the relay's own repository is untouched, and a removed blob uploaded
// again is whole and counted again.
func TestRemoveBlob(t *testing.T) {
	eachBackend(t, func(t *testing.T, open opener) {
		host := newEnv(t, open, 0)
		a := host.tenantEnv(host.repo, "did:key:z6MkTenantA")
		named, b2, b3 := build(200_000, 1), build(1000, 2), build(300_000, 3) // 2, 1 and 3 parts on JetStream
		for _, b := range [][]byte{b2, b3} {
			if _, err := a.repo.AddBlob(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.publish("torpor-agent/2/linux-armv6", named, 2); err != nil {
			t.Fatal(err)
		}
		blobs, _ := a.repo.BlobBytes()
		used, _ := a.repo.Used()
		if blobs != 501_000 {
			t.Fatalf("blob bytes %d; want 501000", blobs)
		}
		for _, b := range [][]byte{b2, b3} {
			if n, err := a.repo.RemoveBlob(sumOf(b)); err != nil || n != int64(len(b)) {
				t.Fatalf("RemoveBlob(%d bytes) = %d, %v; want %d", len(b), n, err, len(b))
			}
		}
		if got, _ := a.repo.BlobBytes(); got != int64(len(named)) {
			t.Errorf("blob bytes after the removals %d; want %d (the named blob's)", got, len(named))
		}
		if got, _ := a.repo.Used(); got != used-301_000 {
			t.Errorf("used after the removals %d; want %d", got, used-301_000)
		}
		_, err := a.repo.RemoveBlob(sumOf(named))
		if !errors.Is(err, updaterepo.ErrNamed) || !strings.Contains(err.Error(), "torpor-agent/2/linux-armv6") {
			t.Errorf("RemoveBlob(the named blob) = %v; want ErrNamed naming its target", err)
		}
		if _, err := a.repo.RemoveBlob(sumOf(b2)); !errors.Is(err, updaterepo.ErrNotFound) {
			t.Errorf("RemoveBlob(a removed blob) = %v; want ErrNotFound", err)
		}
		if _, err := a.repo.RemoveBlob("NOT-HEX"); !errors.Is(err, updaterepo.ErrNotFound) {
			t.Errorf("RemoveBlob(not a SHA-256) = %v; want ErrNotFound", err)
		}
		checkRemoved(t, a, named, b2, b3)
		if n, _ := host.repo.BlobBytes(); n != 0 {
			t.Errorf("the relay's own repository holds %d blob bytes; want 0", n)
		}
		if _, err := a.repo.AddBlob(b3); err != nil {
			t.Fatal(err)
		}
		if got, err := a.repo.Blob(sumOf(b3), 0, int64(len(b3))); err != nil || string(got) != string(b3) {
			t.Errorf("a removed blob uploaded again: %d bytes, %v; want %d", len(got), err, len(b3))
		}
		if got, _ := a.repo.BlobBytes(); got != int64(len(named)+len(b3)) {
			t.Errorf("blob bytes after the upload again %d; want %d", got, len(named)+len(b3))
		}
	})
}

// checkRemoved checks that the blobs removed are neither held nor served
// and that e's device still gets the named target.
func checkRemoved(t *testing.T, e *env, named []byte, removed ...[]byte) {
	t.Helper()
	for _, b := range removed {
		if held, err := e.repo.Holds(sumOf(b)); held || err != nil {
			t.Errorf("Holds(a removed blob) = %v, %v", held, err)
		}
		if _, err := e.repo.Blob(sumOf(b), 0, 10); !errors.Is(err, updaterepo.ErrNotFound) {
			t.Errorf("Blob(a removed blob) = %v; want ErrNotFound", err)
		}
	}
	res, err := e.device().Check(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(res.Path); string(got) != string(named) {
		t.Errorf("the device got %d bytes; want the named target's %d", len(got), len(named))
	}
}

// TestRemoveBlobConcurrent: uploads and removals of different blobs at
// once, through two openings of the repository (on JetStream two
// connections: two relays), leave a count that is exactly the blobs held:
// BlobBytes is the sum of the lengths of the blobs still held, and Used
// falls back to the metadata alone once every blob is removed.
func TestRemoveBlobConcurrent(t *testing.T) {
	eachBackend(t, func(t *testing.T, open opener) {
		e := newEnv(t, open, 0)
		metaOnly, _ := e.repo.Used()
		repos := []*updaterepo.Repo{e.repo, e.repo}
		if !strings.HasSuffix(t.Name(), "bolt") { // a bbolt file is opened once
			repos[1] = e.relay()
		}
		blob := func(i int) []byte { return []byte(fmt.Sprintf("%04d%s", i, strings.Repeat("b", 100+i))) }
		for i := range 20 {
			if _, err := e.repo.AddBlob(blob(i)); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := repos[i%2]
				var err error
				if i < 20 {
					_, err = r.RemoveBlob(sumOf(blob(i)))
				} else {
					_, err = r.AddBlob(blob(i))
				}
				if err != nil {
					t.Errorf("blob %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		var want int64
		for i := range 40 {
			held, err := e.repo.Holds(sumOf(blob(i)))
			if err != nil {
				t.Fatal(err)
			}
			if held != (i >= 20) {
				t.Errorf("blob %d held %v; want %v", i, held, i >= 20)
			}
			if held {
				want += int64(len(blob(i)))
			}
		}
		if got, _ := e.repo.BlobBytes(); got != want {
			t.Errorf("blob bytes %d; want %d, the blobs held", got, want)
		}
		if used, _ := e.repo.Used(); used != metaOnly+want {
			t.Errorf("used %d; want %d (metadata) + %d (blobs)", used, metaOnly, want)
		}
	})
}
