package update_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/torpor-dev/torpor/runtime/update"
)

func refusal(t *testing.T, err error, code update.Code, detail string) {
	t.Helper()
	var r *update.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("got %v; want a refusal %s", err, code)
	}
	if r.Code != code || !strings.Contains(r.Error(), detail) {
		t.Fatalf("refusal %q; want code %s with %q", r.Error(), code, detail)
	}
}

// verified checks that res names a file holding want.
func verified(t *testing.T, res update.Result, err error, want []byte) {
	t.Helper()
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	got, rerr := os.ReadFile(res.Path)
	if rerr != nil || !bytes.Equal(got, want) {
		t.Fatalf("verified file %q: %d bytes (%v); want the target's %d", res.Path, len(got), rerr, len(want))
	}
}

// TestHappyPath: a published target for the device's hardware ends as a
// verified file; the next check finds nothing newer than what it installs.
func TestHappyPath(t *testing.T) {
	r := newRepo(t)
	build := payload(2, 100_000)
	r.publish("torpor-agent/2/linux-armv6", build, agentFor(2))
	r.publish("torpor-agent/2/linux-arm64", payload(3, 10), update.Custom{Version: 2, GOARCH: "arm64"})
	res, err := r.device(1).Check(context.Background())
	verified(t, res, err, build)
	if res.Target != "torpor-agent/2/linux-armv6" || res.Custom.Version != 2 || res.Bytes != int64(len(build)) {
		t.Errorf("result %+v", res)
	}
	res, err = r.device(2).Check(context.Background())
	if err != nil || !res.UpToDate || res.Path != "" {
		t.Errorf("installed 2: %+v, %v; want up to date", res, err)
	}
}

// TestResumesWithinBudget: a target larger than a wake's byte budget is
// fetched over three checks, each resuming where the last stopped.
func TestResumesWithinBudget(t *testing.T) {
	r := newRepo(t)
	build := payload(2, 250_000)
	r.publish("agent", build, agentFor(2))
	c := r.device(1, func(cfg *update.Config) { cfg.Budget = 100_000 })
	var total int64
	for i := range 2 {
		res, err := c.Check(context.Background())
		refusal(t, err, update.Budget, "the rest at the next wake")
		if res.Bytes != 100_000 {
			t.Fatalf("check %d fetched %d bytes; want the budget", i, res.Bytes)
		}
		total += res.Bytes
	}
	res, err := c.Check(context.Background())
	verified(t, res, err, build)
	if total += res.Bytes; total != int64(len(build)) {
		t.Errorf("fetched %d bytes in all; want %d (no byte twice)", total, len(build))
	}
	if r.offsets[0] != 0 || r.offsets[len(r.offsets)-1] != 250_000-(250_000-200_000) {
		t.Errorf("offsets %v", r.offsets)
	}
}

// TestSleptPastExpiry: a device waking two days later finds the
// timestamp expired by its trusted time, asks the relay for a fresh one
// in the same wake and goes on; with none to be had it installs nothing
// and says so.
func TestSleptPastExpiry(t *testing.T) {
	r := newRepo(t)
	r.publish("agent", payload(2, 1000), agentFor(2))
	r.now = t0.Add(48 * time.Hour)
	res, err := r.device(1).Check(context.Background())
	verified(t, res, err, payload(2, 1000))

	r.now = t0.Add(96 * time.Hour)
	r.online = false
	_, err = r.device(1).Check(context.Background())
	refusal(t, err, update.Expired, "the relay had no fresh one")
}

// TestNoTrustedTime: without a trusted time the device judges nothing.
func TestNoTrustedTime(t *testing.T) {
	r := newRepo(t)
	c := r.device(1, func(cfg *update.Config) {
		cfg.Now = func() (time.Time, error) { return time.Time{}, errors.New("no source of time") }
	})
	_, err := c.Check(context.Background())
	refusal(t, err, update.NoTime, "no source of time")
}

// TestFreeze: a relay replaying the timestamp of an earlier check is
// refused: the device trusts a newer one.
func TestFreeze(t *testing.T) {
	r := newRepo(t)
	r.publish("agent", payload(2, 1000), agentFor(2))
	old := r.files["timestamp.json"]
	c := r.device(1)
	if _, err := c.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.publish("agent-3", payload(3, 1000), agentFor(3))
	if _, err := c.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.files["timestamp.json"] = old
	_, err := c.Check(context.Background())
	refusal(t, err, update.Freeze, "timestamp is older than the trusted one")
}

// TestMixAndMatch: targets metadata of another snapshot, properly signed
// by the targets key, is refused: its length and hashes are not the ones
// the snapshot names.
func TestMixAndMatch(t *testing.T) {
	r := newRepo(t)
	r.publish("agent", payload(2, 1000), agentFor(2))
	name := "2.targets.json"
	// Another repository state at the same targets version: a target for
	// version 9 the owner never published with this snapshot.
	tf, err := metadata.TargetFile().FromBytes("agent-9", payload(9, 10), "sha256")
	if err != nil {
		t.Fatal(err)
	}
	r.targets.Signed.Targets["agent-9"] = tf
	r.files[name] = r.sign(r.targets, metadata.TARGETS)
	_, err = r.device(1).Check(context.Background())
	refusal(t, err, update.MixAndMatch, "targets is not the one the role above names")
}

// TestRollback: a repository whose newest build for the device is older
// than the installed one is refused.
func TestRollback(t *testing.T) {
	r := newRepo(t)
	r.publish("agent-3", payload(3, 1000), agentFor(3))
	_, err := r.device(5).Check(context.Background())
	refusal(t, err, update.Rollback, "version 3, older than the installed 5")
}

// TestEndlessData: a relay sending more bytes than the target's length
// leaves is cut off; one sending other bytes of the right length is
// caught by the hashes and its download dropped.
func TestEndlessData(t *testing.T) {
	r := newRepo(t)
	build := payload(2, 1000)
	r.publish("agent", build, agentFor(2))
	r.extra = 1
	c := r.device(1)
	_, err := c.Check(context.Background())
	refusal(t, err, update.EndlessData, "the relay sent 1001 bytes at 0 where the target's length 1000 leaves 1000")

	r.extra = 0
	for k := range r.blobs {
		r.blobs[k] = payload(7, 1000)
	}
	_, err = c.Check(context.Background())
	refusal(t, err, update.BadTarget, "the download is not the target")
	for k := range r.blobs {
		r.blobs[k] = build
	}
	res, err := c.Check(context.Background())
	verified(t, res, err, build)
}

// TestWrongHardware: a newer build for another architecture or board is
// not installed.
func TestWrongHardware(t *testing.T) {
	r := newRepo(t)
	r.publish("agent-armv7", payload(2, 10), update.Custom{Version: 2, Board: "rpi-3", GOARCH: "arm", GOARM: "7"})
	_, err := r.device(1).Check(context.Background())
	refusal(t, err, update.Hardware, "are not for board rpi-zero-w, arm/6")
}

// TestBadSignature: a timestamp signed by a key the root does not name
// is refused.
func TestBadSignature(t *testing.T) {
	r := newRepo(t)
	r.publish("agent", payload(2, 10), agentFor(2))
	_, stranger, _ := ed25519.GenerateKey(nil)
	r.timestamp.Signed.Version++
	r.files["timestamp.json"] = sign(r, r.timestamp, stranger)
	_, err := r.device(1).Check(context.Background())
	refusal(t, err, update.Signature, "timestamp")
}

// TestThresholdNotMet: a root asking two of the targets keys refuses
// targets signed with one; with both it is accepted.
func TestThresholdNotMet(t *testing.T) {
	r := newRepo(t)
	second := r.addKey(metadata.TARGETS)
	r.root.Signed.Roles[metadata.TARGETS].Threshold = 2
	r.files["1.root.json"] = r.sign(r.root, metadata.ROOT)
	r.keys[metadata.TARGETS] = r.keys[metadata.TARGETS][:1]
	r.publish("agent", payload(2, 10), agentFor(2))
	c := r.device(1)
	_, err := c.Check(context.Background())
	refusal(t, err, update.Signature, "targets: signed by 1 of the 2 keys its threshold needs")

	r.keys[metadata.TARGETS] = append(r.keys[metadata.TARGETS], second)
	r.bump()
	res, err := c.Check(context.Background())
	verified(t, res, err, payload(2, 10))
}

// TestOnlineKeysCannotRollBack: a relay holding the snapshot and
// timestamp keys signs a new snapshot that names the targets of an
// earlier publish (still validly signed by the owner). The device, which
// trusts a snapshot naming newer targets, refuses it as a freeze.
func TestOnlineKeysCannotRollBack(t *testing.T) {
	r := newRepo(t)
	r.publish("agent-2", payload(2, 10), agentFor(2))
	oldTargets := r.snapshot.Signed.Meta["targets.json"]
	c := r.device(1)
	if _, err := c.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.publish("agent-3", payload(3, 10), agentFor(3))
	if _, err := c.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.snapshot.Signed.Version++
	r.snapshot.Signed.Meta["targets.json"] = oldTargets
	sb := r.sign(r.snapshot, metadata.SNAPSHOT)
	r.files["4.snapshot.json"] = sb
	r.timestamp.Signed.Version++
	r.timestamp.Signed.Meta["snapshot.json"] = r.metaFile(r.snapshot.Signed.Version, sb)
	r.files["timestamp.json"] = r.sign(r.timestamp, metadata.TIMESTAMP)
	_, err := c.Check(context.Background())
	refusal(t, err, update.Freeze, "snapshot is older than the trusted one")
}

// TestVerifiedFileCheckedAgain: a verified file that changed on flash
// since is not handed on again: it is dropped and fetched anew.
func TestVerifiedFileCheckedAgain(t *testing.T) {
	r := newRepo(t)
	build := payload(2, 5000)
	r.publish("agent", build, agentFor(2))
	c := r.device(1)
	res, err := c.Check(context.Background())
	verified(t, res, err, build)
	if err := os.WriteFile(res.Path, payload(9, 5000), 0o600); err != nil {
		t.Fatal(err)
	}
	calls := r.calls
	res, err = c.Check(context.Background())
	verified(t, res, err, build)
	if r.calls == calls || res.Bytes != 5000 {
		t.Errorf("a changed verified file: %d more fetches, %d bytes; want it fetched again", r.calls-calls, res.Bytes)
	}
}

// TestFlashFirst: a device whose flash has less room than the target
// needs fetches nothing and says so; with the real file system (statfs)
// the same target is fetched.
func TestFlashFirst(t *testing.T) {
	r := newRepo(t)
	build := payload(2, 50_000)
	r.publish("agent", build, agentFor(2))
	full := r.device(1, func(cfg *update.Config) {
		cfg.Flash = func(string) (uint64, uint64, bool) { return 49_999, 1 << 30, true }
	})
	_, err := full.Check(context.Background())
	refusal(t, err, update.NoSpace, "needs 50000 more bytes; the flash has 49999 free")
	if r.calls != 0 {
		t.Errorf("%d blob fetches on a full flash; want none", r.calls)
	}
	res, err := r.device(1).Check(context.Background())
	verified(t, res, err, build)
}

// TestSupersededPartDropped: a download cut by the budget, then a newer
// publish: the partial download of the old target is removed when the
// new one starts, and only the new one's bytes are kept.
func TestSupersededPartDropped(t *testing.T) {
	r := newRepo(t)
	r.publish("agent-2", payload(2, 3000), agentFor(2))
	var dir string
	c := r.device(1, func(cfg *update.Config) { cfg.Budget, dir = 1000, cfg.Dir })
	_, err := c.Check(context.Background())
	refusal(t, err, update.Budget, "1000 of 3000 bytes")
	r.publish("agent-3", payload(3, 3000), agentFor(3))
	_, err = c.Check(context.Background())
	refusal(t, err, update.Budget, "agent-3: 1000 of 3000 bytes")
	parts, _ := os.ReadDir(filepath.Join(dir, "part"))
	if len(parts) != 1 {
		t.Errorf("%d partial downloads kept; want only the newest target's", len(parts))
	}
}
