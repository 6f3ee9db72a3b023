package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const atomVectors = "../testdata/vectors/atom"

// ownKinds are the kinds this package's own files implement; every vector
// of these kinds must pass.
var ownKinds = map[string]bool{
	"data-object": true, "data-object-sequence": true, "credential-binding": true, "encapsulation-part": true,
}

func TestAtomVectors(t *testing.T) {
	rep, err := Run(atomVectors)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, o := range rep.Results {
		counts[o.Kind]++
		switch {
		case o.Status == Fail:
			t.Errorf("%s %s (%s): expected=%s got=%s %s", o.Status, o.ID, o.Kind, o.Expected, o.Got, o.Note)
		case ownKinds[o.Kind] && o.Status != Pass:
			t.Errorf("%s %s (%s): own kind not passing: %s", o.Status, o.ID, o.Kind, o.Note)
		case o.Status == Skip && o.Note == "":
			t.Errorf("%s skipped without a reason", o.ID)
		}
	}
	want := map[string]int{"data-object": 16, "data-object-sequence": 2, "credential-binding": 2, "encapsulation-part": 8}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("ran %d %s vectors, want %d", counts[k], k, n)
		}
	}
	if len(rep.Results) != rep.Passed+rep.Failed+rep.Skipped || rep.Passed < 28 {
		t.Errorf("report counts %d passed, %d failed, %d skipped of %d", rep.Passed, rep.Failed, rep.Skipped, len(rep.Results))
	}
}

// writeVectors writes files (name → content) under a fresh directory.
func writeVectors(tb testing.TB, files map[string]string) string {
	tb.Helper()
	dir := tb.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

func readVector(tb testing.TB, name string) map[string]any {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(atomVectors, name))
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatal(err)
	}
	return m
}

func jsonString(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestRunnerDetectsWrongExpectations edits real vectors so that the code
// disagrees with them: the runner must fail them, and the reason counts.
func TestRunnerDetectsWrongExpectations(t *testing.T) {
	v001 := readVector(t, "001-valid-comms-message.json")
	v001["expect"] = "reject"
	v010 := readVector(t, "010-tampered-payload.json")
	v010["reason"] = "expired"
	v073 := readVector(t, "073-part-media-type-conflict.json")
	v073["expect"] = "accept"
	v060 := readVector(t, "060-credential-binding-mismatch.json")
	v060["leafSignatureKey"] = "TLWr9q15+/WrvMr8wmnYXNJlHtS4hbWGnyQa7fCluik=" // Alice's own key
	v050 := readVector(t, "050-replay-same-id.json")
	seq := v050["sequence"].([]any)
	seq[1].(map[string]any)["expect"] = "accept"
	delete(seq[1].(map[string]any), "reason")
	dir := writeVectors(t, map[string]string{
		"001.json": jsonString(t, v001), "010.json": jsonString(t, v010), "073.json": jsonString(t, v073),
		"060.json": jsonString(t, v060), "050.json": jsonString(t, v050),
	})
	rep, err := Run(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, o := range rep.Results {
		got[o.ID] = string(o.Status) + " " + o.Expected + " / " + o.Got
	}
	want := map[string]string{
		"001-valid-comms-message":         "FAIL reject / accept",
		"010-tampered-payload":            "FAIL reject(expired) / reject(signature-invalid)",
		"073-part-media-type-conflict":    "FAIL accept / reject(media-type-conflict)",
		"060-credential-binding-mismatch": "FAIL reject(credential-key-mismatch) / accept",
		"050-replay-same-id":              "FAIL accept,accept / accept,reject(replay)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if rep.Failed != 5 || rep.Passed != 0 {
		t.Errorf("counts: %d passed, %d failed", rep.Passed, rep.Failed)
	}
}

func TestRunnerMechanics(t *testing.T) {
	Register("test-panics", func(*Vector) Result { panic("boom") })
	Register("test-identities", func(v *Vector) Result { return Compare("2", jsonString(t, len(v.Identities))) })
	Pending("test-pending", "not built")
	dir := writeVectors(t, map[string]string{
		"manifest.json":       `{"identities":{"bob":{"did":"did:key:z6MknGc3ocHs3zdPiJbnaaqDi58NGb4pk1Sp9WxWufuXSdxf"},"alice":{"did":"did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"}}}`,
		"a/schema.json":       `{"$schema":"x","type":"object"}`,
		"a/broken.json":       `{"id":`,
		"a/unknown.json":      `{"id":"u-1","kind":"no-such-kind","expect":"accept"}`,
		"a/pending.json":      `{"id":"p-1","kind":"test-pending","expect":{"accept":true}}`,
		"a/panics.json":       `{"id":"x-1","kind":"test-panics"}`,
		"b/ids.json":          `{"id":"i-1","kind":"test-identities"}`,
		"b/notes.txt":         `not json`,
		"c/manifest.json":     `{"identities":{}}`,
		"c/ids-override.json": `{"id":"i-2","kind":"test-identities"}`,
	})
	rep, err := Run(dir)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		`FAIL a/broken.json expected= got=error (cannot read vector: not valid JSON (line 1, column 6: unexpected end of JSON input); want a vector, a JSON object with string id and kind members)`,
		`FAIL x-1 expected= got=panic (boom)`,
		`SKIP p-1 expected={"accept":true} got=- (not built)`,
		"FAIL u-1 expected=accept got=- (unknown kind \"no-such-kind\"; known kinds: agent-card-build, ",
		`PASS i-1 expected=2 got=2`,
		`FAIL i-2 expected=2 got=0`,
		`1 passed, 4 failed, 1 skipped`,
	}, "\n")
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	wantLines := strings.Split(want, "\n")
	if len(lines) != len(wantLines) {
		t.Fatalf("output:\n%s\nwant:\n%s", text.String(), want)
	}
	for i := range lines {
		if !strings.HasPrefix(lines[i], wantLines[i]) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], wantLines[i])
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Passed != 1 || back.Failed != 4 || back.Skipped != 1 || back.Results[1].Kind != "test-panics" {
		t.Errorf("JSON report = %s (%v)", js.String(), err)
	}
	if _, err := Run(filepath.Join(dir, "missing")); err == nil {
		t.Error("Run(missing dir) succeeded")
	}
}

// TestRunBadInput checks that files that are not vectors, and runs that find
// none, are errors naming the file or directory and saying what was wanted.
func TestRunBadInput(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		arg   string // under the directory; "" runs the directory
		want  string // in the error, or in the only result's note
	}{
		{"empty directory", map[string]string{}, "", "no vectors found under DIR: it has no *.json files"},
		{"only text", map[string]string{"notes.txt": "hello"}, "", "no vectors found under DIR: it has no *.json files"},
		{"only manifest", map[string]string{"manifest.json": `{"identities":{}}`}, "", "it has no *.json files"},
		{"only other JSON", map[string]string{"a.json": `[1,2]`, "b/schema.json": `{"$id":"x"}`}, "",
			"none of its 2 *.json files (a.json, b/schema.json) is a vector, a JSON object with string id and kind members"},
		{"one non-vector file", map[string]string{"a.json": `{"id":"x"}`}, "a.json", "no vectors found: DIR/a.json is not a vector"},
		{"text named json", map[string]string{"a.json": "id: 1\nkind: x\n"}, "",
			"a.json: cannot read vector: not valid JSON (line 1, column 1: invalid character 'i' looking for beginning of value)"},
		{"syntax error on line 3", map[string]string{"a.json": "{\n\"id\": \"x\",\n\"kind\": }"}, "", "not valid JSON (line 3, column 9: "},
		{"kind not a string", map[string]string{"a.json": `{"id":"x","kind":7}`}, "", "a.json: cannot read vector: kind member is 7, want a non-empty string"},
		{"kind without id", map[string]string{"a.json": `{"kind":"data-object"}`}, "", "a.json: cannot read vector: data-object vector has no string id member"},
		{"unknown kind", map[string]string{"a.json": `{"id":"x","kind":"some-future-kind","expect":"accept"}`}, "",
			`x: unknown kind "some-future-kind"; known kinds: `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeVectors(t, tt.files)
			want := strings.ReplaceAll(tt.want, "DIR", dir)
			rep, err := Run(filepath.Join(dir, tt.arg))
			switch {
			case err != nil:
				if !strings.Contains(err.Error(), want) || !errors.Is(err, ErrNoVectors) {
					t.Errorf("Run = %v, want an ErrNoVectors containing %q", err, want)
				}
			case len(rep.Results) != 1 || rep.Failed != 1:
				t.Errorf("Run = %+v, want one failed vector", rep)
			default:
				o := rep.Results[0]
				if got := o.ID + ": " + o.Note; !strings.Contains(got, want) {
					t.Errorf("Run: %s, want %q", got, want)
				}
			}
		})
	}
}

func TestRegistration(t *testing.T) {
	Pending("test-later", "not yet")
	Register("test-later", func(*Vector) Result { return Compare("a", "a") })
	if !Kinds()["test-later"] {
		t.Error("Register did not replace the pending entry")
	}
	Pending("test-later", "again") // must not demote a real handler
	if !Kinds()["test-later"] {
		t.Error("Pending replaced a real handler")
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a kind twice did not panic")
		}
	}()
	Register("test-later", func(*Vector) Result { return Result{} })
}

// TestEnvelopeVectors runs the scope-algebra vectors: every case must pass.
func TestEnvelopeVectors(t *testing.T) {
	rep, err := Run("../testdata/vectors/envelope")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed != 1 || len(rep.Results) != 1 {
		t.Fatalf("report: %+v", rep)
	}
	if o := rep.Results[0]; o.Kind != "envelope-attenuation" || o.Note != "12 of 12 cases agree" {
		t.Errorf("%s (%s): %s", o.ID, o.Kind, o.Note)
	}
}

// TestEnvelopeVectorsDetectWrongExpectation flips one case's expectation:
// the vector must fail and name the case.
func TestEnvelopeVectorsDetectWrongExpectation(t *testing.T) {
	b, err := os.ReadFile("../testdata/vectors/envelope/attenuation.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := os.ReadFile("../testdata/vectors/envelope/lap-scope-v0.json")
	if err != nil {
		t.Fatal(err)
	}
	flipped := strings.Replace(string(b), `"expect": false`, `"expect": true`, 1)
	dir := writeVectors(t, map[string]string{"attenuation.json": flipped, "lap-scope-v0.json": string(v)})
	rep, err := Run(dir)
	if err != nil {
		t.Fatal(err)
	}
	o := rep.Results[0]
	if o.Status != Fail || !strings.Contains(o.Note, "11 of 12 cases agree; disagree: \"sub-verb through an unregistered edge is refused\"") {
		t.Errorf("%s: %s", o.Status, o.Note)
	}
}
