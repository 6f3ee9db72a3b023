package updaterepo_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/internal/tufsign"
	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/store/updaterepo"
)

// The repository on JetStream is one for every relay of a cluster: each
// test opens several Repos, each over its own connection, as relays are,
// on one nats-server and on a 3-server cluster with 3 replicas (each
// connection to the next server).

// TestServedByEveryRelay: what the owner publishes through one relay, a
// device reads through another, and so do range reads across the blob's
// parts in the object store.
func TestServedByEveryRelay(t *testing.T) {
	eachJetStream(t, func(t *testing.T, open opener) {
		e := newEnv(t, open, 0)
		other := e.relay()
		data := build(3*jsstore.BlobPart+1000, 7)
		if err := e.publish("torpor-agent/2/linux-armv6", data, 2); err != nil {
			t.Fatal(err)
		}
		res, err := e.deviceOf(other).Check(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(res.Path); !bytes.Equal(got, data) {
			t.Fatalf("the device reading the other relay got %d bytes, want the %d published", len(got), len(data))
		}
		sum := sha256.Sum256(data)
		sha := hex.EncodeToString(sum[:])
		for _, r := range [][2]int64{{0, 10}, {jsstore.BlobPart - 5, 10}, {jsstore.BlobPart - 5, 2*jsstore.BlobPart + 10}, {int64(len(data)) - 3, 64 << 10}, {int64(len(data)), 10}} {
			got, err := other.Blob(sha, r[0], r[1])
			want := data[r[0]:min(r[0]+r[1], int64(len(data)))]
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("range %d+%d through the other relay: %d bytes, %v; want %d bytes", r[0], r[1], len(got), err, len(want))
			}
		}
		if _, err := other.Blob(sha, int64(len(data))+1, 1); err == nil {
			t.Error("a range past the blob's end was answered")
		}
		if _, err := other.Blob("00"+sha[2:], 0, 1); !errors.Is(err, updaterepo.ErrNotFound) {
			t.Errorf("a blob the repository does not hold: %v; want ErrNotFound", err)
		}
	})
}

// TestRefreshOnceForTheCluster: four relays re-sign at the same moment
// (each relay's timer) and at most one signs: the timestamp's version goes
// up by one. The same for devices asking four relays at once for a fresh
// timestamp, and for one publish uploaded through all four.
func TestRefreshOnceForTheCluster(t *testing.T) {
	eachJetStream(t, func(t *testing.T, open opener) {
		e := newEnv(t, open, 0)
		if err := e.publish("a", build(10, 1), 2); err != nil {
			t.Fatal(err)
		}
		relays := []*updaterepo.Repo{e.repo, e.relay(), e.relay(), e.relay()}
		v := timestampOf(t, e).Signed.Version
		e.clk.Advance(13 * time.Hour)
		signed := all(t, relays, func(r *updaterepo.Repo) (bool, error) { return r.Refresh() })
		if signed != 1 {
			t.Errorf("%d relays signed a timestamp at once; want 1", signed)
		}
		if got := timestampOf(t, e).Signed.Version; got != v+1 {
			t.Errorf("timestamp version %d after the refresh; want %d", got, v+1)
		}
		e.clk.Advance(2 * updaterepo.FreshInterval)
		all(t, relays, func(r *updaterepo.Repo) (bool, error) { return false, r.Fresh() })
		if got := timestampOf(t, e).Signed.Version; got != v+2 {
			t.Errorf("timestamp version %d after four Fresh at once; want %d", got, v+2)
		}
		if _, err := e.repo.AddBlob(build(20, 2)); err != nil {
			t.Fatal(err)
		}
		tb := e.nextTargets("b", build(20, 2), 3)
		all(t, relays, func(r *updaterepo.Repo) (bool, error) { return false, r.Publish(tb) })
		if got := timestampOf(t, e).Signed.Version; got != v+3 {
			t.Errorf("timestamp version %d after one publish through four relays; want %d", got, v+3)
		}
		if res, err := e.deviceOf(relays[3]).Check(context.Background()); err != nil || res.Target != "b" {
			t.Errorf("device: %+v, %v", res, err)
		}
	})
}

// all runs f on every relay at once and counts the trues; an error fails
// the test.
func all(t *testing.T, relays []*updaterepo.Repo, f func(*updaterepo.Repo) (bool, error)) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for _, r := range relays {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := f(r)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if ok {
				n++
			}
		}()
	}
	wg.Wait()
	return n
}

// TestBoundAcrossRelays: four relays upload four blobs at once into a
// repository with room for two: exactly two are taken, the others are
// refused with ErrFull, and the bytes used are the root's and the two
// blobs'.
func TestBoundAcrossRelays(t *testing.T) {
	eachJetStream(t, func(t *testing.T, open opener) {
		const blob = 40 << 10
		e := newEnv(t, open, 100<<10)
		base, err := e.repo.Used()
		if err != nil {
			t.Fatal(err)
		}
		e.maxBytes = base + 2*blob + blob/2
		relays := []*updaterepo.Repo{e.relay(), e.relay(), e.relay(), e.relay()}
		var mu sync.Mutex
		full := 0
		taken := 0
		var wg sync.WaitGroup
		for i, r := range relays {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := r.AddBlob(build(blob, byte(i)))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					taken++
				case errors.Is(err, updaterepo.ErrFull):
					full++
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if taken != 2 || full != 2 {
			t.Errorf("%d blobs taken, %d refused as full; want 2 and 2", taken, full)
		}
		if used, _ := relays[0].Used(); used != base+2*blob {
			t.Errorf("used %d; want %d", used, base+2*blob)
		}
	})
}

// TestHeadTooLarge: targets metadata that would make the head larger
// than a NATS message (here a server with max_payload 200,000) is refused
// with a clear error, and the repository stays as it was.
func TestHeadTooLarge(t *testing.T) {
	srv, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true, Config: "max_payload: 200000\n"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{srv}) })
	e := newEnv(t, func(t testing.TB, cfg updaterepo.Config) *updaterepo.Repo {
		return openOn(t, jsstore.Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL()}, cfg)
	}, 0)
	data := build(1000, 1)
	if err := e.publish("a", data, 2); err != nil {
		t.Fatal(err)
	}
	used, _ := e.repo.Used()
	for i := range 250 {
		if err := tufsign.AddTarget(e.targets, fmt.Sprintf("t/%d/%s", i, strings.Repeat("x", 900)), data, update.CustomKey, update.Custom{Version: 3}); err != nil {
			t.Fatal(err)
		}
	}
	e.targets.Signed.Version++
	b, err := tufsign.Sign(e.targets, e.targetsKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.repo.Publish(b); err == nil || !strings.Contains(err.Error(), "more than a NATS message holds") {
		t.Errorf("targets making the head %d+ bytes: %v", len(b), err)
	}
	if after, _ := e.repo.Used(); after != used {
		t.Errorf("used %d after the refused publish; want %d", after, used)
	}
	if res, err := e.device().Check(context.Background()); err != nil || res.Target != "a" {
		t.Errorf("the device after the refusal: %+v, %v", res, err)
	}
}
