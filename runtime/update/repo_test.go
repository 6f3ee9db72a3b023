package update_test

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/torpor-dev/torpor/runtime/update"
)

// t0 is when the repositories of these tests are made.
var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// repo is a TUF repository made with go-tuf/v2's metadata package, keys
// generated in the test: root and targets as the owner holds them,
// snapshot and timestamp as the relay does. It serves its files as the
// relay would (a Source).
type repo struct {
	t         testing.TB
	now       time.Time
	keys      map[string][]ed25519.PrivateKey
	root      *metadata.Metadata[metadata.RootType]
	targets   *metadata.Metadata[metadata.TargetsType]
	snapshot  *metadata.Metadata[metadata.SnapshotType]
	timestamp *metadata.Metadata[metadata.TimestampType]
	files     map[string][]byte
	blobs     map[string][]byte
	// online is false when the relay cannot sign a fresh timestamp.
	online bool
	// extra, when > 0, is how many bytes Blob adds beyond what is asked.
	extra int
	// calls counts Blob calls; offsets lists their offsets.
	calls   int
	offsets []int64
}

func newRepo(t testing.TB) *repo {
	t.Helper()
	r := &repo{t: t, now: t0, keys: map[string][]ed25519.PrivateKey{}, files: map[string][]byte{},
		blobs: map[string][]byte{}, online: true}
	r.root = metadata.Root(t0.AddDate(1, 0, 0))
	for _, role := range []string{metadata.ROOT, metadata.TARGETS, metadata.SNAPSHOT, metadata.TIMESTAMP} {
		r.addKey(role)
	}
	r.targets = metadata.Targets(t0.AddDate(0, 3, 0))
	r.snapshot = metadata.Snapshot(t0.AddDate(0, 0, 7))
	r.timestamp = metadata.Timestamp(t0.Add(24 * time.Hour))
	r.files["1.root.json"] = r.sign(r.root, metadata.ROOT)
	r.commit()
	return r
}

// addKey gives role a new key in the root (not yet signed).
func (r *repo) addKey(role string) ed25519.PrivateKey {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		r.t.Fatal(err)
	}
	k, err := metadata.KeyFromPublicKey(priv.Public())
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.root.Signed.AddKey(k, role); err != nil {
		r.t.Fatal(err)
	}
	r.keys[role] = append(r.keys[role], priv)
	return priv
}

// sign signs m with the keys of role and returns its bytes.
func sign[T metadata.Roles](r *repo, m *metadata.Metadata[T], keys ...ed25519.PrivateKey) []byte {
	r.t.Helper()
	m.ClearSignatures()
	for _, k := range keys {
		s, err := signature.LoadSigner(k, crypto.Hash(0))
		if err != nil {
			r.t.Fatal(err)
		}
		if _, err := m.Sign(s); err != nil {
			r.t.Fatal(err)
		}
	}
	b, err := m.ToBytes(false)
	if err != nil {
		r.t.Fatal(err)
	}
	return b
}

func (r *repo) sign(m any, role string) []byte {
	switch m := m.(type) {
	case *metadata.Metadata[metadata.RootType]:
		return sign(r, m, r.keys[role]...)
	case *metadata.Metadata[metadata.TargetsType]:
		return sign(r, m, r.keys[role]...)
	case *metadata.Metadata[metadata.SnapshotType]:
		return sign(r, m, r.keys[role]...)
	case *metadata.Metadata[metadata.TimestampType]:
		return sign(r, m, r.keys[role]...)
	}
	r.t.Fatalf("sign %T", m)
	return nil
}

// metaFile is a snapshot or timestamp entry naming b with its length and
// hashes (TUF specification Section 4.4, METAFILES).
func (r *repo) metaFile(version int64, b []byte) *metadata.MetaFiles {
	m := metadata.MetaFile(version)
	tf, err := metadata.TargetFile().FromBytes("x", b, "sha256")
	if err != nil {
		r.t.Fatal(err)
	}
	m.Length, m.Hashes = tf.Length, tf.Hashes
	return m
}

// commit signs targets, a new snapshot and a new timestamp, as a publish
// does.
func (r *repo) commit() {
	tb := r.sign(r.targets, metadata.TARGETS)
	r.files[fmt.Sprintf("%d.targets.json", r.targets.Signed.Version)] = tb
	r.snapshot.Signed.Meta["targets.json"] = r.metaFile(r.targets.Signed.Version, tb)
	sb := r.sign(r.snapshot, metadata.SNAPSHOT)
	r.files[fmt.Sprintf("%d.snapshot.json", r.snapshot.Signed.Version)] = sb
	r.timestamp.Signed.Meta["snapshot.json"] = r.metaFile(r.snapshot.Signed.Version, sb)
	r.files["timestamp.json"] = r.sign(r.timestamp, metadata.TIMESTAMP)
}

// publish adds a target and commits a new version of targets, snapshot
// and timestamp.
func (r *repo) publish(name string, data []byte, c update.Custom) {
	tf, err := metadata.TargetFile().FromBytes(name, data, "sha256")
	if err != nil {
		r.t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{update.CustomKey: c})
	msg := json.RawMessage(raw)
	tf.Custom = &msg
	r.targets.Signed.Targets[name] = tf
	r.blobs[tf.Hashes["sha256"].String()] = data
	r.bump()
}

// bump moves targets, snapshot and timestamp one version on.
func (r *repo) bump() {
	r.targets.Signed.Version++
	r.snapshot.Signed.Version++
	r.timestamp.Signed.Version++
	r.commit()
}

// refreshTimestamp signs a new timestamp expiring a day after r.now, as
// the relay does with its online key.
func (r *repo) refreshTimestamp() {
	r.timestamp.Signed.Version++
	r.timestamp.Signed.Expires = r.now.Add(24 * time.Hour)
	r.files["timestamp.json"] = r.sign(r.timestamp, metadata.TIMESTAMP)
}

func (r *repo) Metadata(_ context.Context, name string, max int64) ([]byte, error) {
	b, ok := r.files[name]
	if !ok {
		return nil, update.ErrNotFound
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: more than %d bytes", name, max)
	}
	return b, nil
}

func (r *repo) Fresh(context.Context) error {
	if !r.online {
		return fmt.Errorf("the relay's timestamp key is offline")
	}
	r.refreshTimestamp()
	return nil
}

func (r *repo) Blob(_ context.Context, sum string, off, n int64) ([]byte, error) {
	r.calls++
	r.offsets = append(r.offsets, off)
	b, ok := r.blobs[sum]
	if !ok {
		return nil, fmt.Errorf("no blob %s: %w", sum, update.ErrNotFound)
	}
	if off > int64(len(b)) {
		return nil, fmt.Errorf("no blob %s at %d", sum, off)
	}
	end := min(off+n, int64(len(b)))
	out := append([]byte(nil), b[off:end]...)
	for range r.extra {
		out = append(out, 'x')
	}
	return out, nil
}

// device is a client on a provisioned device: root.json as the owner's
// key ceremony made it, in a fresh directory.
func (r *repo) device(installed uint64, mod ...func(*update.Config)) *update.Client {
	r.t.Helper()
	return r.deviceIn(r.t.TempDir(), installed, mod...)
}

// deviceIn is device in the directory dir.
func (r *repo) deviceIn(dir string, installed uint64, mod ...func(*update.Config)) *update.Client {
	if err := os.MkdirAll(filepath.Join(dir, "meta"), 0o700); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "meta", "root.json"), r.files["1.root.json"], 0o600); err != nil {
		r.t.Fatal(err)
	}
	cfg := update.Config{Dir: dir, Source: r, Device: zero, Installed: installed,
		Now: func() (time.Time, error) { return r.now, nil }}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := update.New(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

// zero is a Raspberry Pi Zero W's agent.
var zero = update.Device{Board: "rpi-zero-w", GOARCH: "arm", GOARM: "6"}

func agentFor(v uint64) update.Custom {
	return update.Custom{Version: v, Board: zero.Board, GOARCH: zero.GOARCH, GOARM: zero.GOARM}
}

// payload is n bytes of a build, distinct per version.
func payload(v uint64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(uint64(i)*7 + v)
	}
	return b
}
