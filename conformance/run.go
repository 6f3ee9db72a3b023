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

	"github.com/torpor-dev/torpor/did"
)

// Vector is one vector file.
type Vector struct {
	// ID and Kind are the vector's id and kind members.
	ID   string
	Kind string
	// File is the path relative to the directory the run started from.
	File string
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

// Run runs every vector file under dir: every *.json file with string id
// and kind members, in path order. Other JSON files (manifests, schemas,
// examples) are not vectors and are ignored. A vector file that is not
// valid JSON fails. Stores go under a temporary directory removed at the
// end.
func Run(dir string) (*Report, error) {
	files, err := vectorFiles(dir)
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
	for _, f := range files {
		o, ok := runFile(dir, f, tmp, manifests)
		if !ok {
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
	return rep, nil
}

func vectorFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".json") && d.Name() != "manifest.json" {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	sort.Strings(files)
	return files, nil
}

// runFile runs one file; ok is false when it is not a vector.
func runFile(dir, path, tmp string, manifests map[string][]did.DID) (o Outcome, ok bool) {
	rel, _ := filepath.Rel(dir, path)
	o = Outcome{ID: rel, File: rel}
	b, err := os.ReadFile(path)
	if err != nil {
		o.Result = Broken(err)
		return o, true
	}
	var head struct {
		ID     any             `json:"id"`
		Kind   any             `json:"kind"`
		Expect json.RawMessage `json:"expect"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		o.Result = Broken(err)
		return o, true
	}
	id, idOK := head.ID.(string)
	kind, kindOK := head.Kind.(string)
	if !idOK || !kindOK {
		return o, false
	}
	o.ID, o.Kind = id, kind
	ids, err := manifestIdentities(filepath.Dir(path), dir, manifests)
	if err != nil {
		o.Result = Broken(err)
		return o, true
	}
	v := &Vector{ID: id, Kind: kind, File: rel, Raw: b, Identities: ids, tmp: func() (string, error) {
		return os.MkdirTemp(tmp, "vector-")
	}}
	h, found := handler(kind)
	if !found {
		o.Result = Skipped(fmt.Sprintf("unknown kind %q (known: %s)", kind, strings.Join(sortedKinds(), ", ")))
	} else {
		o.Result = safeRun(h, v)
	}
	if o.Status == Skip && o.Expected == "" {
		o.Expected = expectString(head.Expect)
	}
	if o.Status == Skip && o.Got == "" {
		o.Got = "-"
	}
	return o, true
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
