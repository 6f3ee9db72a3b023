package updaterepo_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/internal/tufsign"
	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/store/updaterepo"
)

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func key(t testing.TB) ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// owner holds the offline keys; relay is the repository in a bbolt file.
type env struct {
	t                   testing.TB
	clk                 *clocktest.Clock
	rootKey, targetsKey ed25519.PrivateKey
	snapKey, tsKey      ed25519.PrivateKey
	root                *metadata.Metadata[metadata.RootType]
	rootBytes           []byte
	targets             *metadata.Metadata[metadata.TargetsType]
	repo                *updaterepo.Repo
	opener              opener
	maxBytes            int64
	deviceDir           string
}

func newEnv(t testing.TB, open opener, maxBytes int64) *env {
	if maxBytes == 0 {
		maxBytes = updaterepo.DefaultMaxBytes
	}
	e := &env{t: t, clk: clocktest.New(t0), rootKey: key(t), targetsKey: key(t), snapKey: key(t), tsKey: key(t),
		opener: open, maxBytes: maxBytes}
	e.firstRoot()
	e.open()
	if err := e.repo.SetRoot(e.rootBytes); err != nil {
		t.Fatal(err)
	}
	return e
}

// firstRoot makes the env's root version 1, naming its keys and signed by
// its root key, and its targets metadata, empty.
func (e *env) firstRoot() {
	root, err := tufsign.NewRoot(e.roles(e.rootKey), t0.AddDate(1, 0, 0))
	if err != nil {
		e.t.Fatal(err)
	}
	e.root = root
	if e.rootBytes, err = tufsign.Sign(root, e.rootKey); err != nil {
		e.t.Fatal(err)
	}
	e.targets = metadata.Targets(t0.AddDate(0, 3, 0))
}

// roles are the env's keys as a root names them, with rootKey the one
// root key (threshold 1).
func (e *env) roles(rootKey ed25519.PrivateKey) tufsign.Roles {
	pub := func(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }
	return tufsign.Roles{
		Root: []ed25519.PublicKey{pub(rootKey)}, RootThreshold: 1,
		Targets: []ed25519.PublicKey{pub(e.targetsKey)}, TargetsThreshold: 1,
		Snapshot: pub(e.snapKey), Timestamp: pub(e.tsKey),
	}
}

// open opens the repository (again, after a Close: a relay restarted).
func (e *env) open() { e.repo = e.relay() }

// relay opens the repository as another relay of the cluster does (the
// same bbolt file, or a new connection to the same NATS server).
func (e *env) relay() *updaterepo.Repo {
	r := e.opener(e.t, updaterepo.Config{MaxBytes: e.maxBytes, Snapshot: e.snapKey, Timestamp: e.tsKey, Clock: e.clk})
	e.t.Cleanup(func() { r.Close() })
	return r
}

// publish uploads data and the owner's targets listing it as version v.
func (e *env) publish(name string, data []byte, v uint64) error {
	if _, err := e.repo.AddBlob(data); err != nil {
		return err
	}
	return e.repo.Publish(e.nextTargets(name, data, v))
}

// nextTargets returns the owner's next targets metadata, signed, listing
// data as name at version v too.
func (e *env) nextTargets(name string, data []byte, v uint64) []byte {
	c := update.Custom{Version: v, GOARCH: "arm", GOARM: "6"}
	if err := tufsign.AddTarget(e.targets, name, data, update.CustomKey, c); err != nil {
		e.t.Fatal(err)
	}
	e.targets.Signed.Version++
	b, err := tufsign.Sign(e.targets, e.targetsKey)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// source is the repository as a device reaches it (the link's part is
// elsewhere): a real update.Client checks what the relay serves.
type source struct{ r *updaterepo.Repo }

func (s source) Metadata(_ context.Context, name string, max int64) ([]byte, error) {
	b, err := s.r.Metadata(name, max)
	if errors.Is(err, updaterepo.ErrNotFound) {
		return nil, update.ErrNotFound
	}
	return b, err
}

func (s source) Fresh(context.Context) error { return s.r.Fresh() }

func (s source) Blob(_ context.Context, sum string, off, n int64) ([]byte, error) {
	return s.r.Blob(sum, off, n)
}

// device is a device provisioned with the owner's root, judging time by
// the test's clock (its trusted time).
func (e *env) device() *update.Client { return e.deviceOf(e.repo) }

// deviceOf is the device reading repo (one relay of several).
func (e *env) deviceOf(repo *updaterepo.Repo) *update.Client {
	if e.deviceDir == "" {
		e.deviceDir = e.t.TempDir()
		os.MkdirAll(filepath.Join(e.deviceDir, "meta"), 0o700)
		if err := os.WriteFile(filepath.Join(e.deviceDir, "meta", "root.json"), e.rootBytes, 0o600); err != nil {
			e.t.Fatal(err)
		}
	}
	c, err := update.New(update.Config{Dir: e.deviceDir, Source: source{repo}, Installed: 1,
		Device: update.Device{GOARCH: "arm", GOARM: "6"}, Now: func() (time.Time, error) { return e.clk.Now(), nil }})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func build(n int, v byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i) ^ v
	}
	return b
}

// TestPublishReachesADevice: the owner's root, a blob and the owner's
// targets go in; a device running go-tuf/v2's checks gets a verified
// file from what the relay signs and serves.
func TestPublishReachesADevice(t *testing.T) {
	eachBackend(t, func(t *testing.T, open opener) {
		e := newEnv(t, open, 0)
		data := build(300_000, 2)
		if err := e.publish("torpor-agent/2/linux-armv6", data, 2); err != nil {
			t.Fatal(err)
		}
		res, err := e.device().Check(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(res.Path)
		if string(got) != string(data) || res.Custom.Version != 2 {
			t.Fatalf("device got %d bytes of version %d", len(got), res.Custom.Version)
		}
		used, err := e.repo.Used()
		if err != nil || used < int64(len(data)) {
			t.Errorf("used %d, %v; want at least the blob's %d bytes", used, err, len(data))
		}
	})
}

// TestPublishRefuses: targets not signed by the owner's targets key, not
// newer, naming a blob the relay does not hold, or before any root, are
// refused with what is wrong, and the device still sees the last good
// publish.
func TestPublishRefuses(t *testing.T) {
	eachBackend(t, func(t *testing.T, open opener) {
		e := newEnv(t, open, 0)
		if err := e.publish("a", build(10, 1), 2); err != nil {
			t.Fatal(err)
		}
		e.targets.Signed.Version++
		stranger, _ := tufsign.Sign(e.targets, key(t))
		if err := e.repo.Publish(stranger); err == nil || !strings.Contains(err.Error(), "not enough signatures") {
			t.Errorf("targets by a stranger: %v", err)
		}
		e.targets.Signed.Version = 1
		old, _ := tufsign.Sign(e.targets, e.targetsKey)
		if err := e.repo.Publish(old); err == nil || !strings.Contains(err.Error(), "version 1 is not newer than the current 2") {
			t.Errorf("targets not newer: %v", err)
		}
		tufsign.AddTarget(e.targets, "b", build(20, 2), update.CustomKey, update.Custom{Version: 3, GOARCH: "arm", GOARM: "6"})
		e.targets.Signed.Version = 5
		missing, _ := tufsign.Sign(e.targets, e.targetsKey)
		if err := e.repo.Publish(missing); err == nil || !strings.Contains(err.Error(), `target "b": no blob`) {
			t.Errorf("targets naming no blob: %v", err)
		}
		res, err := e.device().Check(context.Background())
		if err != nil || res.Target != "a" {
			t.Errorf("after the refusals the device gets %+v, %v; want target a", res, err)
		}
		fresh := filepath.Join(t.TempDir(), "fresh.db")
		r, _ := updaterepo.Open(updaterepo.Config{Path: fresh, Snapshot: e.snapKey, Timestamp: e.tsKey, Clock: e.clk})
		defer r.Close()
		if err := r.Publish(old); err == nil || !strings.Contains(err.Error(), "no root yet") {
			t.Errorf("targets before a root: %v", err)
		}
	})
}

// TestBoundInBytes: a blob that would pass the bound is refused, says so,
// and takes nothing.
func TestBoundInBytes(t *testing.T) {
	eachBackend(t, func(t *testing.T, open opener) {
		e := newEnv(t, open, 64<<10)
		before, _ := e.repo.Used()
		_, err := e.repo.AddBlob(build(64<<10, 1))
		if !errors.Is(err, updaterepo.ErrFull) || !strings.Contains(err.Error(), "of 65536") {
			t.Fatalf("a blob past the bound: %v", err)
		}
		if after, _ := e.repo.Used(); after != before {
			t.Errorf("used %d after a refused blob; want %d", after, before)
		}
		if _, err := e.repo.AddBlob(build(1000, 1)); err != nil {
			t.Errorf("a blob within the bound: %v", err)
		}
	})
}

// TestPublishNeedsDeltaBlobs: targets naming a delta (docs/updates.md,
// "Delta targets") whose blob the relay does not hold, or holds with
// another length, are refused; with the blob uploaded they are taken.
func TestPublishNeedsDeltaBlobs(t *testing.T) {
	eachBackend(t, func(t *testing.T, open opener) {
		e := newEnv(t, open, 0)
		data, delta := build(1000, 1), build(100, 2)
		sum := sha256.Sum256(delta)
		d := map[string]any{"from": strings.Repeat("a", 64), "sha256": hex.EncodeToString(sum[:]), "length": len(delta)}
		c := map[string]any{"version": 2, "goarch": "arm", "goarm": "6", "deltas": []any{d}}
		if _, err := e.repo.AddBlob(data); err != nil {
			t.Fatal(err)
		}
		if err := tufsign.AddTarget(e.targets, "a", data, update.CustomKey, c); err != nil {
			t.Fatal(err)
		}
		e.targets.Signed.Version++
		b, _ := tufsign.Sign(e.targets, e.targetsKey)
		if err := e.repo.Publish(b); err == nil || !strings.Contains(err.Error(), "no blob with its delta's sha256") {
			t.Errorf("targets naming a delta not uploaded: %v", err)
		}
		if _, err := e.repo.AddBlob(delta); err != nil {
			t.Fatal(err)
		}
		if err := e.repo.Publish(b); err != nil {
			t.Errorf("with the delta uploaded: %v", err)
		}
	})
}
