package vectors

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testdata is the module's copy of the working group's vectors.
const testdata = "../testdata"

// TestVectors runs every vector file in mls/testdata: every case must pass
// (none may be skipped: the files hold cipher suite 1 or suite-independent
// cases only).
func TestVectors(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testdata, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no vector files in %s (%v)", testdata, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			results, err := Run(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(results) == 0 {
				t.Fatal("file has no cases")
			}
			for _, r := range results {
				if r.Status != Pass {
					t.Error(r)
				}
			}
		})
	}
}

// allKinds are the fourteen kinds of the working group's format.
var allKinds = []string{
	"crypto-basics", "deserialization", "key-schedule", "message-protection", "messages",
	"passive-client", "psk_secret", "secret-tree", "transcript-hashes", "tree-math",
	"tree-operations", "tree-validation", "treekem", "welcome",
}

func TestAllKindsRegistered(t *testing.T) {
	if diff := cmp.Diff(allKinds, Kinds()); diff != "" {
		t.Errorf("registered kinds (-want +got):\n%s", diff)
	}
}

// TestRunner checks the runner itself: classification by fields, skipping of
// other suites, failures reported and not hidden.
func TestRunner(t *testing.T) {
	good := mustCase(t, "crypto-basics.cs1.json")
	other := clone(t, good)
	other["cipher_suite"] = json.RawMessage("2")
	tampered := clone(t, good)
	tampered["derive_secret"] = json.RawMessage(`{"secret":"00","label":"x","out":"00"}`)
	extra := clone(t, good)
	extra["surprise"] = json.RawMessage(`1`)
	unknown := fields{"no_such_field": json.RawMessage(`1`)}

	tests := []struct {
		name string
		c    fields
		want Status
		kind string
	}{
		{"vector", good, Pass, "crypto-basics"},
		{"other suite", other, Skip, "crypto-basics"},
		{"wrong expected value", tampered, Fail, "crypto-basics"},
		{"unknown field", extra, Fail, "crypto-basics"},
		{"unknown kind", unknown, Fail, "unknown"},
	}
	var cases []fields
	for _, tt := range tests {
		cases = append(cases, tt.c)
	}
	data, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	results, err := RunData("mixed.json", data)
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range tests {
		r := results[i]
		if r.Status != tt.want || r.Kind != tt.kind || r.Index != i {
			t.Errorf("%s: got %v, want status %v kind %s index %d", tt.name, r, tt.want, tt.kind, i)
		}
	}
	var s Summary
	s.Add(results)
	if got, want := s.String(), "1 passed, 3 failed, 1 skipped"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

func TestRunDataRejectsNonArrays(t *testing.T) {
	for _, in := range []string{`{}`, `[1]`, `nope`, ``} {
		if _, err := RunData("x.json", []byte(in)); err == nil {
			t.Errorf("RunData(%q) succeeded", in)
		}
	}
}

func TestPanicIsFailure(t *testing.T) {
	register(&kind{name: "panicky", requires: []string{"panic_please"}, run: func(fields) error { panic("boom") }})
	t.Cleanup(func() { kinds = kinds[:len(kinds)-1] })
	r := runCase("p.json", 0, fields{"panic_please": json.RawMessage("1")})
	if r.Status != Fail || r.Err == nil || !strings.Contains(r.Err.Error(), "boom") {
		t.Errorf("runCase = %v, want a failure naming the panic", r)
	}
	if errors.Is(r.Err, errSkip) {
		t.Error("a panic counted as a skip")
	}
}

func mustCase(t testing.TB, file string) fields {
	t.Helper()
	var cs []fields
	data := mustRead(t, filepath.Join(testdata, file))
	if err := json.Unmarshal(data, &cs); err != nil || len(cs) == 0 {
		t.Fatalf("%s: %v", file, err)
	}
	return cs[0]
}

func clone(t testing.TB, c fields) fields {
	t.Helper()
	out := fields{}
	for k, v := range c {
		out[k] = v
	}
	return out
}
