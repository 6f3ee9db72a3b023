package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/torpor-dev/torpor/internal/jsonpos"

	"github.com/torpor-dev/torpor/did"
)

// Vector is one vector file.
type Vector struct {
	// ID and Kind are the vector's id and kind members.
	ID   string
	Kind string
	// File is the path relative to the directory the run started from.
	File string
	// Path is the file's path as the run opened it, for a vector that
	// names a file beside it (kind_envelope.go).
	Path string
	// Raw is the whole vector file.
	Raw json.RawMessage
	// Identities are the test identities of the manifest.json in the
	// vector's directory (or the nearest parent that has one), in the
	// manifest's order.
	Identities []did.DID

	tmp func() (string, error)
}

// TempDir returns a fresh directory for the vector's stores, removed when
// the run ends.
func (v *Vector) TempDir() (string, error) { return v.tmp() }

// Report is the outcome of a run.
type Report struct {
	Results []Outcome `json:"results"`
	Passed  int       `json:"passed"`
	Failed  int       `json:"failed"`
	Skipped int       `json:"skipped"`
}

// Outcome is one vector's result.
type Outcome struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	File string `json:"file"`
	Result
}

// run runs every vector file under dir: every *.json file holding a JSON
// object with a kind member, in path order. dir may also name one vector
// file. Other JSON files (manifests, schemas, examples, arrays) are not
// vectors and are ignored. A file that is not valid JSON, or whose id or
// kind is not a string, fails, and so does a vector of a kind nothing
// registered. Stores go under a temporary directory removed at the end.
//
// run returns an error wrapping ErrNoVectors when it finds no vector, so
// that a wrong directory never reads as a clean run.
func run(dir string) (*Report, error) {
	files, single, err := vectorFiles(dir)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "torpor-conformance-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	rep := &Report{Results: []Outcome{}}
	manifests := map[string][]did.DID{}
	var ignored []string
	for _, f := range files {
		o, ok := runFile(dir, f, tmp, manifests)
		if !ok {
			ignored = append(ignored, o.File)
			continue
		}
		rep.Results = append(rep.Results, o)
		switch o.Status {
		case Pass:
			rep.Passed++
		case Skip:
			rep.Skipped++
		default:
			rep.Failed++
		}
	}
	if len(rep.Results) == 0 {
		return nil, noVectors(dir, single, files, ignored)
	}
	return rep, nil
}

// noVectors explains why a run found no vector.
func noVectors(dir string, single bool, files, ignored []string) error {
	switch {
	case single:
		return fmt.Errorf("%w: %s is not a vector; want %s", ErrNoVectors, dir, vectorShape)
	case len(files) == 0:
		return fmt.Errorf("%w under %s: it has no *.json files; want vector files, each %s", ErrNoVectors, dir, vectorShape)
	default:
		return fmt.Errorf("%w under %s: none of its %d *.json files (%s) is a vector, %s",
			ErrNoVectors, dir, len(files), strings.Join(firstN(ignored, 3), ", "), vectorShape)
	}
}

// vectorShape says what a vector file holds, for error messages.
const vectorShape = "a JSON object with string id and kind members"

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], "…")
}

// vectorFiles returns the *.json files under dir other than manifests, in
// path order. When dir is a file, it is the only one and single is set.
func vectorFiles(dir string) (files []string, single bool, err error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, false, fmt.Errorf("conformance: %w", err)
	}
	if !fi.IsDir() {
		return []string{dir}, true, nil
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".json") && d.Name() != "manifest.json" {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("conformance: %w", err)
	}
	sort.Strings(files)
	return files, false, nil
}

// runFile runs one file; ok is false when it is not a vector.
func runFile(dir, path, tmp string, manifests map[string][]did.DID) (o Outcome, ok bool) {
	rel, _ := filepath.Rel(dir, path)
	if rel == "." {
		rel = filepath.Base(path)
	}
	o = Outcome{ID: rel, File: rel}
	b, err := os.ReadFile(path)
	if err != nil {
		o.Result = Broken(err)
		return o, true
	}
	head, isVector, err := readHead(b)
	if err != nil {
		o.Result = Broken(err)
		return o, true
	}
	if !isVector {
		return o, false
	}
	o.ID, o.Kind = head.ID, head.Kind
	ids, err := manifestIdentities(filepath.Dir(path), dir, manifests)
	if err != nil {
		o.Result = Broken(err)
		return o, true
	}
	v := &Vector{ID: head.ID, Kind: head.Kind, File: rel, Path: path, Raw: b, Identities: ids, tmp: func() (string, error) {
		return os.MkdirTemp(tmp, "vector-")
	}}
	h, found := handler(head.Kind)
	if !found {
		o.Result = Result{Status: Fail, Got: "-", Note: fmt.Sprintf("unknown kind %q; known kinds: %s",
			head.Kind, strings.Join(sortedKinds(), ", "))}
	} else if err := checkExpect(head.Kind, head.Expect); err != nil {
		o.Result = Result{Status: Fail, Got: "-", Note: err.Error()}
	} else {
		o.Result = safeRun(h, v)
	}
	if o.Expected == "" && (o.Status == Skip || !found) {
		o.Expected = expectString(head.Expect)
	}
	if o.Status == Skip && o.Got == "" {
		o.Got = "-"
	}
	return o, true
}

// vectorHead is the members every vector has.
type vectorHead struct {
	ID, Kind string
	Expect   json.RawMessage
}

// readHead reads the id, kind and expect members of a vector file. A JSON
// value without a kind member (a schema, an example, an array) is not a
// vector: isVector is false. The error says what is wrong with a file that
// is not JSON or is a vector with a malformed id or kind.
func readHead(b []byte) (h vectorHead, isVector bool, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return h, false, nil // valid JSON, not an object
		}
		return h, false, fmt.Errorf("not valid JSON (%s); want a vector, %s", jsonpos.Describe(b, err), vectorShape)
	}
	kind, hasKind := m["kind"]
	if !hasKind {
		return h, false, nil
	}
	if json.Unmarshal(kind, &h.Kind) != nil || h.Kind == "" {
		return h, true, fmt.Errorf("kind member is %s, want a non-empty string", kind)
	}
	if json.Unmarshal(m["id"], &h.ID) != nil || h.ID == "" {
		return h, true, fmt.Errorf("%s vector has no string id member", h.Kind)
	}
	h.Expect = m["expect"]
	return h, true, nil
}

// safeRun turns a handler panic into a failure of that vector.
func safeRun(h Handler, v *Vector) (r Result) {
	defer func() {
		if p := recover(); p != nil {
			r = Result{Status: Fail, Got: "panic", Note: fmt.Sprint(p)}
		}
	}()
	return h(v)
}

// expectString renders a vector's expect member for a skipped vector.
func expectString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil || b.Len() == 0 {
		return "?"
	}
	return b.String()
}

// manifestIdentities reads the identities of the nearest manifest.json at
// or above dir, not above root.
func manifestIdentities(dir, root string, cache map[string][]did.DID) ([]did.DID, error) {
	if ids, ok := cache[dir]; ok {
		return ids, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	var ids []did.DID
	switch {
	case err == nil:
		ids, err = parseManifest(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", filepath.Join(dir, "manifest.json"), err)
		}
	case errors.Is(err, fs.ErrNotExist) && filepath.Clean(dir) != filepath.Clean(root) && filepath.Dir(dir) != dir:
		if ids, err = manifestIdentities(filepath.Dir(dir), root, cache); err != nil {
			return nil, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	cache[dir] = ids
	return ids, nil
}

func parseManifest(b []byte) ([]did.DID, error) {
	var m struct {
		Identities map[string]struct {
			DID string `json:"did"`
		} `json:"identities"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(m.Identities))
	for n := range m.Identities {
		names = append(names, n)
	}
	sort.Strings(names)
	var ids []did.DID
	seen := map[did.DID]bool{}
	for _, n := range names {
		d, err := did.Parse(m.Identities[n].DID)
		if err != nil {
			return nil, fmt.Errorf("identity %s: %v", n, err)
		}
		if !seen[d] {
			ids = append(ids, d)
			seen[d] = true
		}
	}
	return ids, nil
}

// WriteText writes one line per vector, "PASS|FAIL|SKIP <id> expected=…
// got=…" with the note after it when there is one, and a summary line
// "N passed, M failed, K skipped".
func (r *Report) WriteText(w io.Writer) error {
	for _, o := range r.Results {
		line := fmt.Sprintf("%s %s expected=%s got=%s", o.Status, o.ID, o.Expected, o.Got)
		if o.Note != "" {
			line += " (" + o.Note + ")"
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", r.Passed, r.Failed, r.Skipped)
	return err
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
