package update_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/torpor-dev/torpor/internal/tufsign"
	"github.com/torpor-dev/torpor/runtime/update"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// deltaBuilds are two builds differing in a few places, and the running
// one on disk.
func deltaBuilds(t *testing.T) (old, next []byte, running string) {
	old = payload(1, 300_000)
	next = bytes.Clone(old)
	copy(next[1000:], "one line changed")
	next = append(next[:200_000:200_000], append([]byte("code moved "), next[200_000:]...)...)
	running = filepath.Join(t.TempDir(), "torpor-agent")
	if err := os.WriteFile(running, old, 0o700); err != nil {
		t.Fatal(err)
	}
	return old, next, running
}

// publishWithDelta publishes next with a delta from old (whose bytes
// may be replaced by bad, a delta the owner signed that does not patch
// to the target).
func publishWithDelta(t *testing.T, r *repo, old, next, bad []byte) []byte {
	d, err := tufsign.Delta(old, next)
	if err != nil {
		t.Fatal(err)
	}
	if bad != nil {
		d = bad
	}
	cu := agentFor(2)
	cu.Deltas = []update.Delta{{From: sha(old), SHA256: sha(d), Length: int64(len(d))}}
	r.blobs[sha(d)] = d
	r.publish("agent", next, cu)
	return d
}

// TestDeltaTarget: a device running the build a delta is from fetches
// the delta, not the target, and hands on the patched build, which is
// the target; a device running another build fetches the target whole.
func TestDeltaTarget(t *testing.T) {
	old, next, running := deltaBuilds(t)
	r := newRepo(t)
	d := publishWithDelta(t, r, old, next, nil)
	res, err := r.device(1, func(c *update.Config) { c.Running = running }).Check(context.Background())
	verified(t, res, err, next)
	if res.Bytes != int64(len(d)) || len(d) > len(next)/10 {
		t.Errorf("fetched %d bytes (a %d-byte delta) for a %d-byte target", res.Bytes, len(d), len(next))
	}
	other := filepath.Join(t.TempDir(), "other")
	os.WriteFile(other, payload(9, 1000), 0o700)
	res, err = r.device(1, func(c *update.Config) { c.Running = other }).Check(context.Background())
	verified(t, res, err, next)
	if res.Bytes != int64(len(next)) {
		t.Errorf("a device running another build fetched %d bytes; want the whole %d", res.Bytes, len(next))
	}
}

// TestDeltaNotTheTarget: a delta the owner signed that patches to
// something else than the target (here: the delta from another build,
// which patches garbage or fails) is refused as bad-target, never handed
// on, and the next check fetches the target whole. So is one that
// patches to a build of the target's length that is not the target (the
// zstd frame checks out; the target's hashes do not).
func TestDeltaNotTheTarget(t *testing.T) {
	old, next, running := deltaBuilds(t)
	fromOther, err := tufsign.Delta(payload(5, 300_000), next)
	if err != nil {
		t.Fatal(err)
	}
	toOther, err := tufsign.Delta(old, payload(6, len(next)))
	if err != nil {
		t.Fatal(err)
	}
	for _, wrong := range [][]byte{fromOther, toOther} {
		deltaNotTheTarget(t, old, next, running, wrong)
	}
}

func deltaNotTheTarget(t *testing.T, old, next []byte, running string, wrong []byte) {
	r := newRepo(t)
	publishWithDelta(t, r, old, next, wrong)
	dir := t.TempDir()
	dev := r.deviceIn(dir, 1, func(c *update.Config) { c.Running = running })
	_, err := dev.Check(context.Background())
	refusal(t, err, update.BadTarget, "the whole target next")
	if m, _ := filepath.Glob(filepath.Join(dir, "verified", "*")); len(m) != 0 {
		t.Fatalf("verified files after a bad delta: %v", m)
	}
	res, err := dev.Check(context.Background())
	verified(t, res, err, next)
	if res.Bytes != int64(len(next)) {
		t.Errorf("after the bad delta the device fetched %d bytes; want the whole %d", res.Bytes, len(next))
	}
}

// TestDeltaResumes: a delta larger than the budget is fetched over
// several checks, like a target.
func TestDeltaResumes(t *testing.T) {
	old := payload(1, 200_000)
	next := payload(2, 200_000) // nothing shared: the delta is about as large as the build
	running := filepath.Join(t.TempDir(), "torpor-agent")
	os.WriteFile(running, old, 0o700)
	r := newRepo(t)
	d := publishWithDelta(t, r, old, next, nil)
	dev := r.device(1, func(c *update.Config) { c.Running = running; c.Budget = int64(len(d))/2 + 1 })
	_, err := dev.Check(context.Background())
	refusal(t, err, update.Budget, "the rest at the next wake")
	res, err := dev.Check(context.Background())
	verified(t, res, err, next)
	if res.Bytes != int64(len(d))-(int64(len(d))/2+1) {
		t.Errorf("the second check fetched %d bytes of a %d-byte delta", res.Bytes, len(d))
	}
}

// TestDeltaFieldsChecked: deltas on a gzip target, or with a length past
// the target's, are refused as invalid custom fields.
func TestDeltaFieldsChecked(t *testing.T) {
	r := newRepo(t)
	cu := agentFor(2)
	cu.Deltas = []update.Delta{{From: sha([]byte("a")), SHA256: sha([]byte("b")), Length: 2000}}
	r.publish("agent", payload(2, 1000), cu)
	_, err := r.device(1).Check(context.Background())
	refusal(t, err, update.Invalid, "a length of 1 to the target's 1000 bytes")
}

// TestDeltaMissingAtTheRelay: a delta the relay does not hold (the owner
// signed it, the relay lost it) is a failed fetch once; the next check
// fetches the target whole, rather than asking for the delta at every
// wake.
func TestDeltaMissingAtTheRelay(t *testing.T) {
	old, next, running := deltaBuilds(t)
	r := newRepo(t)
	d := publishWithDelta(t, r, old, next, nil)
	delete(r.blobs, sha(d))
	dev := r.device(1, func(c *update.Config) { c.Running = running })
	_, err := dev.Check(context.Background())
	refusal(t, err, update.Fetch, "the whole target next")
	res, err := dev.Check(context.Background())
	verified(t, res, err, next)
}
