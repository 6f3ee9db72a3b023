package tuf_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"
)

// scenario is one client run: the trusted root, the ops loaded after it,
// and the class each op must end in (in this package and in go-tuf's).
type scenario struct {
	name string
	// consistent turns consistent snapshots on in the root.
	consistent bool
	build      func(r *repo) (root []byte, ops []op)
	want       []string
	// ref is the reference time; zero means t0.
	ref time.Time
}

// start is the root of r as it is now, and the chain of its files.
func start(r *repo) ([]byte, []op) {
	root := r.rootFile()
	return root, r.publish().chain()
}

var ok3 = []string{classOK, classOK, classOK}

func scenarios() []scenario {
	return slices.Concat(scenarios1(), scenarios2(), scenarios3(), scenarios4(), scenarios5(), scenarios6())
}

func scenarios1() []scenario {
	return []scenario{
		{name: "plain", build: start, want: ok3},
		{name: "plain consistent", consistent: true, build: start, want: ok3},
		{name: "unknown fields in signed verify", build: func(r *repo) ([]byte, []op) {
			r.root.UnrecognizedFields = map[string]any{"x-note": "kept", "x-n": 7}
			r.timestamp.UnrecognizedFields = map[string]any{"x-ts": []any{"a", true, nil}}
			r.snap.UnrecognizedFields = map[string]any{"x-snap": map[string]any{"b": "c"}}
			r.targets.UnrecognizedFields = map[string]any{"x-targets": "é\u2028"}
			return start(r)
		}, want: ok3},
		{name: "root rotated, new root keys", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			r.rotate(metadata.ROOT, 1, 1, "b")
			return root, append([]op{{role: "root", b: r.rootFile()}}, r.publish().chain()...)
		}, want: []string{classOK, classOK, classOK, classOK}},
		{name: "root rotated to threshold 2", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			r.rotate(metadata.ROOT, 2, 3, "b")
			return root, append([]op{{role: "root", b: r.rootFile()}}, r.publish().chain()...)
		}, want: []string{classOK, classOK, classOK, classOK}},
		{name: "root rotated, new threshold not met", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			r.rotate(metadata.ROOT, 2, 2, "b")
			r.keys[metadata.ROOT] = r.keys[metadata.ROOT][:1]
			return root, []op{{role: "root", b: r.rootFile()}}
		}, want: []string{classUnsigned}},
		{name: "root rotated, not signed by the old root", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			r.rotate(metadata.ROOT, 1, 1, "b")
			r.rootKeysOf = nil
			return root, []op{{role: "root", b: r.rootFile()}}
		}, want: []string{classUnsigned}},
		{name: "root rotated, not signed by its own keys", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			old := r.keys[metadata.ROOT]
			r.rotate(metadata.ROOT, 1, 1, "b")
			return root, []op{{role: "root", b: envelope(r.t, r.root, by(old...)...)}}
		}, want: []string{classUnsigned}},
		{name: "old root threshold 2, new root signed by one old key", build: func(r *repo) ([]byte, []op) {
			r.rotate(metadata.ROOT, 2, 2, "a")
			r.root.Version = 1
			r.rootKeysOf = nil
			root := r.rootFile()
			old := r.keys[metadata.ROOT]
			r.rotate(metadata.ROOT, 1, 1, "b")
			return root, []op{{role: "root", b: envelope(r.t, r.root, by(old[0], r.keys[metadata.ROOT][0])...)}}
		}, want: []string{classUnsigned}},
		{name: "root version skipped", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			r.rotate(metadata.ROOT, 1, 1, "b")
			r.root.Version++
			return root, []op{{role: "root", b: r.rootFile()}}
		}, want: []string{classVersion}},
	}
}

func scenarios2() []scenario {
	return []scenario{
		{name: "root version replayed", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			return root, []op{{role: "root", b: root}}
		}, want: []string{classVersion}},
		{name: "timestamp keys rotated by the root", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			old := r.keys[metadata.TIMESTAMP]
			r.rotate(metadata.TIMESTAMP, 1, 1, "b")
			r.tsSigs = by(old...)
			return root, append([]op{{role: "root", b: r.rootFile()}}, r.publish().chain()...)
		}, want: []string{classOK, classUnsigned, classOrder, classOrder}},
		{name: "root after the timestamp", build: func(r *repo) ([]byte, []op) {
			root, ops := start(r)
			r.rotate(metadata.ROOT, 1, 1, "b")
			return root, append(ops[:1:1], op{role: "root", b: r.rootFile()})
		}, want: []string{classOK, classOrder}},
		{name: "expired trusted root", ref: t0.AddDate(1, 0, 1), build: start, want: []string{classExpired, classOrder, classOrder}},
		{name: "expired root, fresh root version 2", ref: t0.AddDate(1, 0, 1), build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			r.rotate(metadata.ROOT, 1, 1, "b")
			r.root.Expires = t0.AddDate(2, 0, 0)
			r.timestamp.Expires = t0.AddDate(1, 0, 2)
			r.snap.Expires, r.targets.Expires = r.timestamp.Expires, r.timestamp.Expires
			return root, append([]op{{role: "root", b: r.rootFile()}}, r.publish().chain()...)
		}, want: []string{classOK, classOK, classOK, classOK}},
		{name: "expired timestamp", ref: t0.Add(25 * time.Hour), build: start, want: []string{classExpired, classExpired, classOrder}},
		{name: "expired snapshot", build: func(r *repo) ([]byte, []op) {
			r.snap.Expires = t0.Add(-time.Second)
			return start(r)
		}, want: []string{classOK, classExpired, classExpired}},
		{name: "expired targets", build: func(r *repo) ([]byte, []op) {
			r.targets.Expires = t0.Add(-time.Second)
			return start(r)
		}, want: []string{classOK, classOK, classExpired}},
		{name: "expires at the reference time", ref: t0.Add(24 * time.Hour), build: start, want: ok3},
		{name: "timestamp rollback", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			r.timestamp.Version = 3
			newer := r.publish()
			r.timestamp.Version = 2
			older := r.publish()
			return root, []op{{role: "timestamp", b: newer.ts}, {role: "timestamp", b: older.ts}}
		}, want: []string{classOK, classVersion}},
		{name: "timestamp of the trusted version", build: func(r *repo) ([]byte, []op) {
			root, ops := start(r)
			return root, []op{ops[0], ops[0]}
		}, want: []string{classOK, classEqual}},
	}
}

func scenarios3() []scenario {
	return []scenario{
		{name: "timestamp names an older snapshot", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			r.snap.Version = 2
			first := r.publish()
			r.timestamp.Version, r.snap.Version = 2, 1
			second := r.publish()
			return root, []op{{role: "timestamp", b: first.ts}, {role: "timestamp", b: second.ts}}
		}, want: []string{classOK, classVersion}},
		{name: "newer timestamp replaces the trusted one", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			first := r.publish()
			r.bump()
			second := r.publish()
			return root, append([]op{{role: "timestamp", b: first.ts}}, second.chain()...)
		}, want: []string{classOK, classOK, classOK, classOK}},
		{name: "snapshot length mismatch", build: func(r *repo) ([]byte, []op) {
			root, ops := start(r)
			ops[1].b = append(ops[1].b, ' ')
			return root, ops
		}, want: []string{classOK, classLength, classOrder}},
		{name: "snapshot hash mismatch", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			f := r.publish()
			r.snap.UnrecognizedFields = map[string]any{"x": "y"}
			other := r.snapshotFile(f.targets)
			r.timestamp.Meta["snapshot.json"].Length = int64(len(other))
			f.ts = envelope(r.t, r.timestamp, by(r.keys[metadata.TIMESTAMP]...)...)
			return root, []op{{role: "timestamp", b: f.ts}, {role: "snapshot", b: other}}
		}, want: []string{classOK, classLength}},
		{name: "snapshot hash of an unknown algorithm", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			f := r.publish()
			r.timestamp.Meta["snapshot.json"].Hashes["md5"] = []byte{1}
			f.ts = envelope(r.t, r.timestamp, by(r.keys[metadata.TIMESTAMP]...)...)
			return root, []op{{role: "timestamp", b: f.ts}, {role: "snapshot", b: f.snap}}
		}, want: []string{classOK, classLength}},
		{name: "snapshot of another version than the timestamp names", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			tb := r.targetsFile()
			sb := r.snapshotFile(tb)
			r.snap.Version = 5
			ts := r.timestampFile(sb)
			return root, []op{{role: "timestamp", b: ts}, {role: "snapshot", b: sb}, {role: "targets", b: tb}}
		}, want: []string{classOK, classVersion, classVersion}},
		{name: "trusted snapshot, then a newer one", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			old := r.publish()
			r.bump()
			cur := r.publish()
			return root, []op{{role: "timestamp", b: cur.ts}, {role: "snapshot", trusted: true, b: old.snap},
				{role: "snapshot", b: cur.snap}, {role: "targets", b: cur.targets}}
		}, want: []string{classOK, classVersion, classOK, classOK}},
	}
}

func scenarios4() []scenario {
	return []scenario{
		{name: "snapshot rolls targets back", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			r.targets.Version = 3
			old := r.publish()
			r.timestamp.Version, r.snap.Version, r.targets.Version = 2, 2, 2
			cur := r.publish()
			return root, []op{{role: "timestamp", b: cur.ts}, {role: "snapshot", trusted: true, b: old.snap},
				{role: "snapshot", b: cur.snap}}
		}, want: []string{classOK, classVersion, classVersion}},
		{name: "snapshot drops a file the trusted one lists", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			r.snap.Meta["role-a.json"] = metadata.MetaFile(1)
			old := r.publish()
			delete(r.snap.Meta, "role-a.json")
			r.bump()
			cur := r.publish()
			return root, []op{{role: "timestamp", b: cur.ts}, {role: "snapshot", trusted: true, b: old.snap},
				{role: "snapshot", b: cur.snap}}
		}, want: []string{classOK, classVersion, classInvalid}},
		{name: "targets of another version than the snapshot names", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			tb := r.targetsFile()
			r.targets.Version = 4
			f := files{targets: tb}
			f.snap = r.snapshotFile(tb)
			f.ts = r.timestampFile(f.snap)
			return root, f.chain()
		}, want: []string{classOK, classOK, classVersion}},
		{name: "targets hash mismatch", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			f := r.publish()
			r.addTarget("torpor-agent-2", []byte("build two"))
			f.targets = r.targetsFile()
			return root, f.chain()
		}, want: []string{classOK, classOK, classLength}},
		{name: "snapshot names no targets", build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			tb := r.targetsFile()
			delete(r.snap.Meta, "targets.json")
			sb := envelope(r.t, r.snap, by(r.keys[metadata.SNAPSHOT]...)...)
			return root, []op{{role: "timestamp", b: r.timestampFile(sb)}, {role: "snapshot", b: sb}, {role: "targets", b: tb}}
		}, want: []string{classOK, classOK, classInvalid}},
		{name: "wrong role type", build: func(r *repo) ([]byte, []op) {
			root, ops := start(r)
			return root, []op{{role: "timestamp", b: ops[1].b}}
		}, want: []string{classInvalid}},
		{name: "targets signed by the snapshot key", build: func(r *repo) ([]byte, []op) {
			r.tSig = by(r.keys[metadata.SNAPSHOT]...)
			return start(r)
		}, want: []string{classOK, classOK, classUnsigned}},
	}
}

func scenarios5() []scenario {
	return []scenario{
		{name: "two signatures by one key", build: func(r *repo) ([]byte, []op) {
			k := r.keys[metadata.TIMESTAMP][0]
			r.tsSigs = []sig{{k: k}, {k: k}}
			return start(r)
		}, want: []string{classInvalid, classOrder, classOrder}},
		{name: "two signatures under one key id, one bad", build: func(r *repo) ([]byte, []op) {
			k := r.keys[metadata.TIMESTAMP][0]
			r.tsSigs = []sig{{k: k, bad: true}, {k: k}}
			return start(r)
		}, want: []string{classInvalid, classOrder, classOrder}},
		{name: "signature by an unlisted key only", build: func(r *repo) ([]byte, []op) {
			r.tsSigs = by(newKey(r.t, "stranger"))
			return start(r)
		}, want: []string{classUnsigned, classOrder, classOrder}},
		{name: "signature by an unlisted key beside the listed one", build: func(r *repo) ([]byte, []op) {
			r.tsSigs = append(by(newKey(r.t, "stranger")), by(r.keys[metadata.TIMESTAMP]...)...)
			return start(r)
		}, want: ok3},
		{name: "signature by the root key under the timestamp key's id", build: func(r *repo) ([]byte, []op) {
			r.tsSigs = []sig{{k: r.keys[metadata.ROOT][0], id: r.keys[metadata.TIMESTAMP][0].id}}
			return start(r)
		}, want: []string{classUnsigned, classOrder, classOrder}},
		{name: "bad signature", build: func(r *repo) ([]byte, []op) {
			r.snapSigs = []sig{{k: r.keys[metadata.SNAPSHOT][0], bad: true}}
			return start(r)
		}, want: []string{classOK, classUnsigned, classOrder}},
		{name: "signed object changed after signing", build: func(r *repo) ([]byte, []op) {
			root, ops := start(r)
			ops[0].b = []byte(replaceOnce(string(ops[0].b), `"version":1`, `"version":9`))
			return root, ops
		}, want: []string{classUnsigned, classOrder, classOrder}},
		{name: "one key under two ids counts once", build: func(r *repo) ([]byte, []op) {
			k := r.keys[metadata.TIMESTAMP][0]
			twin := k
			twin.tuf = &metadata.Key{Type: k.tuf.Type, Scheme: k.tuf.Scheme, Value: k.tuf.Value,
				UnrecognizedFields: map[string]any{"x": "twin"}}
			twin.id, _ = twin.tuf.ID()
			setRole(r.root, metadata.TIMESTAMP, 2, k, twin)
			r.tsSigs = by(k, twin)
			return start(r)
		}, want: []string{classUnsigned, classOrder, classOrder}},
		{name: "threshold 2 of 3", build: func(r *repo) ([]byte, []op) {
			ks := []key{newKey(r.t, "t-a"), newKey(r.t, "t-b"), newKey(r.t, "t-c")}
			setRole(r.root, metadata.TIMESTAMP, 2, ks...)
			r.tsSigs = by(ks[0], ks[2])
			return start(r)
		}, want: ok3},
		{name: "threshold 0", build: func(r *repo) ([]byte, []op) {
			r.root.Roles[metadata.TIMESTAMP].Threshold = 0
			return start(r)
		}, want: []string{classInvalid, classOrder, classOrder}},
	}
}

func scenarios6() []scenario {
	return []scenario{
		{name: "root threshold 0", build: func(r *repo) ([]byte, []op) {
			r.root.Roles[metadata.ROOT].Threshold = 0
			return start(r)
		}, want: nil},
		{name: "role lists a key the root lacks", build: func(r *repo) ([]byte, []op) {
			r.root.Roles[metadata.TIMESTAMP].KeyIDs = append(r.root.Roles[metadata.TIMESTAMP].KeyIDs, "00")
			return start(r)
		}, want: []string{classInvalid, classOrder, classOrder}},
		{name: "root with no timestamp role", build: func(r *repo) ([]byte, []op) {
			delete(r.root.Roles, metadata.TIMESTAMP)
			return start(r)
		}, want: []string{classInvalid, classOrder, classOrder}},
		{name: "not JSON", build: func(r *repo) ([]byte, []op) {
			return r.rootFile(), []op{{role: "timestamp", b: []byte("{")}}
		}, want: []string{classInvalid}},
		{name: "snapshot before timestamp", build: func(r *repo) ([]byte, []op) {
			root, ops := start(r)
			return root, ops[1:]
		}, want: []string{classOrder, classOrder}},
	}
}

// stricter are the scenarios where this package refuses what go-tuf/v2's
// trustedmetadata takes (or crashes on), by name, with go-tuf's classes.
// Each is documented in the package doc and docs/updates.md.
var stricter = map[string]struct {
	build  func(r *repo) ([]byte, []op)
	ours   []string
	goTUF  []string
	reason string
}{
	"ecdsa key listed for a role": {
		reason: "only ed25519 keys verify; a role listing another key type is refused, whatever the signatures",
		build: func(r *repo) ([]byte, []op) {
			k, id := ecdsaKey(r.t)
			r.root.Keys[id] = k
			r.root.Roles[metadata.TIMESTAMP].KeyIDs = append(r.root.Roles[metadata.TIMESTAMP].KeyIDs, id)
			return start(r)
		},
		ours: []string{classInvalid, classOrder, classOrder}, goTUF: ok3,
	},
	"ed25519 key of another scheme": {
		reason: "a key's scheme must be the one its keytype defines (Section 4.2); go-tuf reads the keytype only",
		build: func(r *repo) ([]byte, []op) {
			r.root.Keys[r.keys[metadata.TIMESTAMP][0].id].Scheme = "ed25519-ph"
			return start(r)
		},
		ours: []string{classInvalid, classOrder, classOrder}, goTUF: ok3,
	},
	"timestamp names no snapshot": {
		reason: "a timestamp's meta must name snapshot.json (Section 4.6); go-tuf takes it and then dereferences nil",
		build: func(r *repo) ([]byte, []op) {
			root := r.rootFile()
			delete(r.timestamp.Meta, "snapshot.json")
			return root, []op{{role: "timestamp", b: envelope(r.t, r.timestamp, by(r.keys[metadata.TIMESTAMP]...)...)},
				{role: "snapshot", b: envelope(r.t, r.snap, by(r.keys[metadata.SNAPSHOT]...)...)}}
		},
		ours: []string{classInvalid, classOrder}, goTUF: []string{classOK, classPanic},
	},
	"a member twice": {
		reason: "metadata must be strict JSON (internal/strictjson): encoding/json keeps the last of two members, another reader the first",
		build: func(r *repo) ([]byte, []op) {
			root, ops := start(r)
			ops[0].b = []byte(replaceOnce(string(ops[0].b), `"signatures":`, `"signatures":[],"signatures":`))
			return root, ops
		},
		ours: []string{classInvalid, classOrder, classOrder}, goTUF: ok3,
	},
	"a member named but for case as Section 4 names one": {
		reason: "encoding/json matches member names without case; a reader that compares them exactly would not see the member",
		build: func(r *repo) ([]byte, []op) {
			root, ops := start(r)
			ops[0].b = []byte(replaceOnce(string(ops[0].b), `"keyid":`, `"KeyID":`))
			return root, ops
		},
		ours: []string{classInvalid, classOrder, classOrder}, goTUF: ok3,
	},
	"null target": {
		reason: "a null entry of keys, roles, meta or targets is refused; go-tuf dereferences nil",
		build: func(r *repo) ([]byte, []op) {
			r.targets.Targets["gone"] = nil
			return start(r)
		},
		ours: []string{classOK, classOK, classInvalid}, goTUF: []string{classOK, classOK, classPanic},
	},
}

func replaceOnce(s, old, new string) string { return strings.Replace(s, old, new, 1) }

// TestDifferential runs each scenario through this package and through
// go-tuf/v2's trustedmetadata: both must end each op in the class the
// scenario wants, and in the same trusted state.
func TestDifferential(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			root, ops := sc.build(newRepo(t, sc.consistent))
			ref := sc.ref
			if ref.IsZero() {
				ref = t0
			}
			ours, theirs := runOurs(root, ref, ops), runGoTUF(root, ref, ops)
			want := sc.want
			if want == nil {
				// the trusted root itself is refused
				if ours.newRoot == classOK || ours.newRoot != theirs.newRoot {
					t.Fatalf("New: ours %s, go-tuf %s; want both to refuse alike", ours.newRoot, theirs.newRoot)
				}
				return
			}
			if ours.newRoot != classOK || !slices.Equal(ours.steps, want) {
				t.Errorf("ours: New %s, ops %v; want %v", ours.newRoot, ours.steps, want)
			}
			if theirs.newRoot != classOK || !slices.Equal(theirs.steps, want) {
				t.Errorf("go-tuf: New %s, ops %v; want %v", theirs.newRoot, theirs.steps, want)
			}
			if ours.state != theirs.state {
				t.Errorf("trusted state:\nours   %s\ngo-tuf %s", ours.state, theirs.state)
			}
		})
	}
}

// TestStricter runs the scenarios where this package deliberately
// refuses what go-tuf takes, and checks both sides of the difference.
func TestStricter(t *testing.T) {
	for name, sc := range stricter {
		t.Run(name, func(t *testing.T) {
			root, ops := sc.build(newRepo(t, false))
			ours, theirs := runOurs(root, t0, ops), runGoTUF(root, t0, ops)
			if !slices.Equal(ours.steps, sc.ours) {
				t.Errorf("ours: %v, want %v (%s)", ours.steps, sc.ours, sc.reason)
			}
			if !slices.Equal(theirs.steps, sc.goTUF) {
				t.Errorf("go-tuf: %v, want %v: if go-tuf now agrees, move this case to scenarios", theirs.steps, sc.goTUF)
			}
		})
	}
}
