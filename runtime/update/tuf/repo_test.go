package tuf_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"
)

// repo is a TUF repository built with go-tuf/v2's metadata types: the
// signed objects of the four roles and the keys of each. Its files are
// signed by envelope, so that a test can sign them wrongly on purpose.
type repo struct {
	t                      testing.TB
	keys                   map[string][]key
	root                   *metadata.RootType
	timestamp              *metadata.TimestampType
	snap                   *metadata.SnapshotType
	targets                *metadata.TargetsType
	rootKeysOf             []key // the keys that sign the next root file
	tsSigs, snapSigs, tSig []sig // when not nil, the signatures of those files
}

func newRepo(t testing.TB, consistent bool) *repo {
	t.Helper()
	r := &repo{t: t, keys: map[string][]key{}}
	r.root = &metadata.Root(t0.AddDate(1, 0, 0)).Signed
	r.root.ConsistentSnapshot = consistent
	for _, role := range []string{metadata.ROOT, metadata.TIMESTAMP, metadata.SNAPSHOT, metadata.TARGETS} {
		k := newKey(t, role+"-1")
		r.keys[role] = []key{k}
		setRole(r.root, role, 1, k)
	}
	r.timestamp = &metadata.Timestamp(t0.Add(24 * time.Hour)).Signed
	r.snap = &metadata.Snapshot(t0.AddDate(0, 0, 7)).Signed
	r.targets = &metadata.Targets(t0.AddDate(0, 3, 0)).Signed
	r.addTarget("torpor-agent-1", []byte("build one"))
	return r
}

func (r *repo) addTarget(name string, data []byte) {
	tf, err := metadata.TargetFile().FromBytes(name, data, "sha256")
	if err != nil {
		r.t.Fatal(err)
	}
	custom := json.RawMessage(fmt.Sprintf(`{"torpor":{"version":%d,"goarch":"arm"}}`, len(r.targets.Targets)+1))
	tf.Custom = &custom
	r.targets.Targets[name] = tf
}

// rootFile is the root signed by the keys of its root role (and by
// rootKeysOf, the previous root's, when set).
func (r *repo) rootFile() []byte {
	keys := append(append([]key(nil), r.rootKeysOf...), r.keys[metadata.ROOT]...)
	return envelope(r.t, r.root, by(dedupe(keys)...)...)
}

func dedupe(keys []key) []key {
	var out []key
	seen := map[string]bool{}
	for _, k := range keys {
		if !seen[k.id] {
			seen[k.id] = true
			out = append(out, k)
		}
	}
	return out
}

func (r *repo) targetsFile() []byte {
	return envelope(r.t, r.targets, r.sigs(r.tSig, metadata.TARGETS)...)
}

func (r *repo) sigs(set []sig, role string) []sig {
	if set != nil {
		return set
	}
	return by(r.keys[role]...)
}

// snapshotFile names targets file tb (length, sha256, version) and signs.
func (r *repo) snapshotFile(tb []byte) []byte {
	r.snap.Meta["targets.json"] = metaFile(r.targets.Version, tb)
	return envelope(r.t, r.snap, r.sigs(r.snapSigs, metadata.SNAPSHOT)...)
}

func (r *repo) timestampFile(sb []byte) []byte {
	r.timestamp.Meta["snapshot.json"] = metaFile(r.snap.Version, sb)
	return envelope(r.t, r.timestamp, r.sigs(r.tsSigs, metadata.TIMESTAMP)...)
}

func metaFile(v int64, b []byte) *metadata.MetaFiles {
	m := metadata.MetaFile(v)
	sum := sha256.Sum256(b)
	m.Length, m.Hashes = int64(len(b)), metadata.Hashes{"sha256": sum[:]}
	return m
}

// files are the three files of one publish, each naming the next.
type files struct{ ts, snap, targets []byte }

func (r *repo) publish() files {
	tb := r.targetsFile()
	sb := r.snapshotFile(tb)
	return files{ts: r.timestampFile(sb), snap: sb, targets: tb}
}

// chain is the ops that load f.
func (f files) chain() []op {
	return []op{{role: "timestamp", b: f.ts}, {role: "snapshot", b: f.snap}, {role: "targets", b: f.targets}}
}

// bump moves the versions of timestamp, snapshot and targets one on.
func (r *repo) bump() {
	r.timestamp.Version++
	r.snap.Version++
	r.targets.Version++
}

// rotate makes the next root version with new keys for role (n of them,
// threshold th): signed by the previous root's keys and the new ones.
func (r *repo) rotate(role string, th, n int, seed string) {
	r.rootKeysOf = r.keys[metadata.ROOT]
	var ks []key
	for i := range n {
		ks = append(ks, newKey(r.t, fmt.Sprintf("%s-%s-%d", role, seed, i)))
	}
	for _, old := range r.keys[role] {
		delete(r.root.Keys, old.id)
	}
	r.keys[role] = ks
	setRole(r.root, role, th, ks...)
	r.root.Version++
}
