package tuf_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/cjson"
	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/torpor-dev/torpor/internal/strictjson"
	"github.com/torpor-dev/torpor/runtime/update/tuf"
)

// fuzzRoles are the roles FuzzDifferential's first argument picks.
var fuzzRoles = []string{tuf.RoleRoot, tuf.RoleTimestamp, tuf.RoleSnapshot, tuf.RoleTargets}

// fuzzRun is the client run FuzzDifferential makes of a fuzzed "signed"
// object for role: the files before it are fixed, and name it by version
// 1 only (no length or hashes), so that any bytes reach the role's checks;
// the fuzzed object is signed with the role's key over its canonical form
// (when it is JSON and has one), as a repository would sign it.
func fuzzRun(t testing.TB, role string, signed []byte) (root []byte, ops []op) {
	r := newRepo(t, false)
	root = r.rootFile()
	file := signed
	if json.Valid(signed) {
		k := r.keys[role]
		if role == tuf.RoleRoot {
			k = append(k, r.keys[role]...)[:1]
		}
		file = envelope(t, json.RawMessage(signed), by(k...)...)
	}
	r.timestamp.Meta["snapshot.json"] = metadata.MetaFile(1)
	ts := envelope(t, r.timestamp, by(r.keys[metadata.TIMESTAMP]...)...)
	r.snap.Meta["targets.json"] = metadata.MetaFile(1)
	snap := envelope(t, r.snap, by(r.keys[metadata.SNAPSHOT]...)...)
	switch role {
	case tuf.RoleRoot:
		return root, []op{{role: role, b: file}}
	case tuf.RoleTimestamp:
		return root, []op{{role: role, b: file}}
	case tuf.RoleSnapshot:
		return root, []op{{role: tuf.RoleTimestamp, b: ts}, {role: role, b: file}}
	}
	return root, []op{{role: tuf.RoleTimestamp, b: ts}, {role: tuf.RoleSnapshot, b: snap}, {role: role, b: file}}
}

// FuzzDifferential loads a fuzzed, validly signed "signed" object of one
// role into this package and into go-tuf/v2's trustedmetadata, at a
// fuzzed reference time (t0 and a number of seconds), and compares the
// outcomes. They must be the same, except:
//   - go-tuf verifies signatures over its own re-encoding of what it
//     parsed, not over the bytes received; where the two differ (a
//     member go-tuf drops or rewrites: "length": 0, a fraction of a
//     second, upper-case hex) go-tuf refuses what was validly signed,
//     and this package may take it;
//   - go-tuf may crash (a nil entry) where this package refuses;
//   - this package refuses what TestStricter lists (strictReason).
//
// Seeds are the four roles' signed objects as go-tuf writes them, and a
// few that probe the differences.
func FuzzDifferential(f *testing.F) {
	r := newRepo(f, false)
	seeds := map[uint8]any{0: r.root, 1: r.timestamp, 2: r.snap, 3: r.targets}
	r.timestamp.Meta["snapshot.json"] = metadata.MetaFile(1)
	r.snap.Meta["targets.json"] = metadata.MetaFile(1)
	r.root.Version = 2
	for i, s := range seeds {
		b, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(i, int32(0), b)
		f.Add(i, int32(25*3600), b) // the fixed timestamp expired
	}
	for _, s := range []string{
		`{"_type":"timestamp","version":1,"expires":"2026-06-02T12:00:00.000Z","meta":{"snapshot.json":{"version":1,"length":0}}}`,
		`{"_type":"timestamp","version":1,"Version":2,"expires":"2026-06-02T12:00:00Z","meta":{"snapshot.json":{"version":1}}}`,
		`{"_type":"timestamp","version":1,"version":2,"expires":"2026-06-02T12:00:00Z","meta":{"snapshot.json":{"version":1}}}`,
		`{"_type":"timestamp","version":1,"expires":"2026-06-02T13:00:00+01:00","meta":{"snapshot.json":{"version":1,"hashes":{"sha256":"AB"}}}}`,
	} {
		f.Add(uint8(1), int32(3600), []byte(s))
	}
	f.Add(uint8(3), int32(-1), []byte(`{"_type":"targets","version":1,"expires":"2026-07-01T00:00:00Z","targets":{"a":{"length":1,"hashes":{"sha256":"00"},"custom":{"x":1.5}},"b":null}}`))
	f.Fuzz(func(t *testing.T, pick uint8, refSeconds int32, signed []byte) {
		role := fuzzRoles[int(pick)%len(fuzzRoles)]
		root, ops := fuzzRun(t, role, signed)
		ref := t0.Add(time.Duration(refSeconds) * time.Second)
		ours, theirs := runOurs(root, ref, ops), runGoTUF(root, ref, ops)
		if ours.newRoot != classOK || theirs.newRoot != classOK {
			t.Fatalf("the fixed root: ours %s, go-tuf %s", ours.newRoot, theirs.newRoot)
		}
		last := len(ops) - 1
		if !slices.Equal(ours.steps[:last], theirs.steps[:last]) {
			t.Fatalf("the fixed files: ours %v, go-tuf %v", ours.steps, theirs.steps)
		}
		o, g := ours.steps[last], theirs.steps[last]
		switch {
		case o == g && ours.state == theirs.state:
			return
		case o == g && o != classOK:
			t.Fatalf("both refuse (%s) but the trusted states differ:\nours   %s\ngo-tuf %s", o, ours.state, theirs.state)
		case g == classPanic && o == classInvalid:
			return
		case (g == classUnsigned || g == classInvalid) && reencodes(role, signed):
			return
		case o == classInvalid && strictReason(role, signed, ops[last].b) != "":
			return
		}
		t.Fatalf("%s %q:\nours   %s %s\ngo-tuf %s %s", role, signed, o, ours.state, g, theirs.state)
	})
}

// reencodes reports whether go-tuf's re-encoding of signed, as role, is
// not the canonical form of signed itself: go-tuf then checks signatures
// over bytes nobody signed.
func reencodes(role string, signed []byte) bool {
	var v any
	switch role {
	case tuf.RoleRoot:
		v = &metadata.RootType{}
	case tuf.RoleTimestamp:
		v = &metadata.TimestampType{}
	case tuf.RoleSnapshot:
		v = &metadata.SnapshotType{}
	default:
		v = &metadata.TargetsType{}
	}
	if err := json.Unmarshal(signed, v); err != nil {
		return false
	}
	theirs, err1 := cjson.EncodeCanonical(v)
	ours, err2 := cjson.EncodeCanonical(json.RawMessage(signed))
	return err1 != nil || err2 != nil || string(theirs) != string(ours)
}

// strictReason says which of this package's deliberate refusals (the
// cases of TestStricter) signed, in the metadata file file, falls under,
// or "".
func strictReason(role string, signed, file []byte) string {
	if strictjson.Check(file) != nil {
		return "not strict JSON (a member twice, invalid UTF-8, deep nesting)"
	}
	if tuf.ExactNames(file, role) != nil {
		return "a member named but for case as Section 4 names one"
	}
	var s struct {
		Keys    map[string]*tuf.Key        `json:"keys"`
		Roles   map[string]json.RawMessage `json:"roles"`
		Meta    map[string]json.RawMessage `json:"meta"`
		Targets map[string]json.RawMessage `json:"targets"`
	}
	if json.Unmarshal(signed, &s) != nil {
		return ""
	}
	for _, k := range s.Keys {
		if k == nil || k.Type != tuf.KeyTypeEd25519 || k.Scheme != tuf.SchemeEd25519 || len(k.Value.Public) != 64 {
			return "a key this package cannot use, or null"
		}
	}
	for _, m := range []map[string]json.RawMessage{s.Roles, s.Meta, s.Targets} {
		for _, v := range m {
			if strings.TrimSpace(string(v)) == "null" {
				return "a null entry"
			}
		}
	}
	if role == tuf.RoleTimestamp {
		if v, ok := s.Meta["snapshot.json"]; !ok || string(v) == "null" {
			return "a timestamp naming no snapshot"
		}
	}
	return ""
}
