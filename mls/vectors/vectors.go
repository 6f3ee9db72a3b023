// Package vectors runs the MLS working group's interoperability test vectors
// (github.com/mlswg/mls-implementations, test-vectors/*.json, described in
// mls/testdata/FORMAT.md) against this module's RFC 9420 implementation.
//
// A vector file is a JSON array of cases. Run tells each case's kind from its
// fields, not from the file name, so renamed or concatenated files still run:
// every kind registers the fields that identify it (for example crypto-basics
// is the kind with a "ref_hash" field). Each kind lives in its own file,
// <kind>.go, and registers itself in init; this is compile-time
// registration, not runtime discovery.
//
// Cases of a cipher suite other than 0x0001 are reported as skipped, never as
// passed. A case whose fields match no registered kind fails.
//
// The Go tests of this package and the command "torporctl mls-vectors" run
// the same code.
package vectors

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Status is the outcome of one case.
type Status int

// Outcomes.
const (
	Pass Status = iota
	Fail
	Skip
)

func (s Status) String() string {
	switch s {
	case Pass:
		return "PASS"
	case Fail:
		return "FAIL"
	case Skip:
		return "SKIP"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// A Result is the outcome of one case of a vector file.
type Result struct {
	File   string // base name of the file
	Index  int    // position of the case in the file's array
	Kind   string // the kind the case was recognised as, or "unknown"
	Status Status
	// Err says why the case failed or was skipped; nil when it passed.
	Err error
}

// String formats r as one line: status, file[index], kind and the reason.
func (r Result) String() string {
	s := fmt.Sprintf("%s %s[%d] %s", r.Status, r.File, r.Index, r.Kind)
	if r.Err != nil {
		// One line per case: joined errors are separated by "; ".
		s += ": " + strings.ReplaceAll(r.Err.Error(), "\n", "; ")
	}
	return s
}

// Summary counts results by status.
type Summary struct {
	Passed, Failed, Skipped int
}

// Add counts rs.
func (s *Summary) Add(rs []Result) {
	for _, r := range rs {
		switch r.Status {
		case Pass:
			s.Passed++
		case Fail:
			s.Failed++
		case Skip:
			s.Skipped++
		}
	}
}

func (s Summary) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", s.Passed, s.Failed, s.Skipped)
}

// fields is one case: its top-level JSON fields, undecoded.
type fields map[string]json.RawMessage

// A kind is one type of test vector.
type kind struct {
	name string
	// requires lists fields every case of the kind has; excludes lists
	// fields that tell it apart from a kind with the same required fields.
	requires, excludes []string
	// run checks one case. It returns nil when the case passes, an error
	// wrapping errSkip when it does not apply (another cipher suite), and
	// any other error when it fails.
	run func(c fields) error
}

var kinds []*kind

// register adds k. It is called from init functions only; two kinds that
// could match the same case are a programming error and panic.
func register(k *kind) {
	for _, o := range kinds {
		if o.name == k.name {
			panic("vectors: kind " + k.name + " registered twice")
		}
	}
	kinds = append(kinds, k)
}

// Kinds returns the names of the registered kinds, sorted.
func Kinds() []string {
	var names []string
	for _, k := range kinds {
		names = append(names, k.name)
	}
	sort.Strings(names)
	return names
}

func (k *kind) matches(c fields) bool {
	for _, f := range k.requires {
		if _, ok := c[f]; !ok {
			return false
		}
	}
	for _, f := range k.excludes {
		if _, ok := c[f]; ok {
			return false
		}
	}
	return true
}

// classify returns the kind of c, or an error if none or several match.
func classify(c fields) (*kind, error) {
	var found []*kind
	for _, k := range kinds {
		if k.matches(c) {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		names := make([]string, 0, len(c))
		for f := range c {
			names = append(names, f)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("no registered vector kind has the fields %s", strings.Join(names, ","))
	default:
		return nil, fmt.Errorf("ambiguous case: kinds %s and %s both match", found[0].name, found[1].name)
	}
}

// errSkip marks a case that does not apply to this implementation.
var errSkip = errors.New("skipped")

// skipf returns an error that makes the case count as skipped.
func skipf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errSkip}, args...)...)
}

// Run reads the vector file at path and runs every case in it. The error is
// non-nil only if the file cannot be read or is not a JSON array of
// objects; failing cases are reported in the results.
func Run(path string) ([]Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return RunData(filepath.Base(path), data)
}

// RunData runs the cases of a vector file's contents; name labels the
// results.
func RunData(name string, data []byte) ([]Result, error) {
	var cases []fields
	if err := json.Unmarshal(data, &cases); err != nil {
		return nil, fmt.Errorf("vectors: %s: %w", name, err)
	}
	results := make([]Result, len(cases))
	for i, c := range cases {
		results[i] = runCase(name, i, c)
	}
	return results, nil
}

func runCase(name string, i int, c fields) (r Result) {
	r = Result{File: name, Index: i, Kind: "unknown"}
	k, err := classify(c)
	if err != nil {
		r.Status, r.Err = Fail, err
		return r
	}
	r.Kind = k.name
	if err := checkSuite(c); err != nil {
		r.Status, r.Err = Skip, err
		return r
	}
	defer func() {
		if p := recover(); p != nil {
			r.Status, r.Err = Fail, fmt.Errorf("panic: %v", p)
		}
	}()
	err = k.run(c)
	switch {
	case err == nil:
		r.Status = Pass
	case errors.Is(err, errSkip):
		r.Status, r.Err = Skip, err
	default:
		r.Status, r.Err = Fail, err
	}
	return r
}

// supportedSuite is MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519.
const supportedSuite = 1

// checkSuite skips a case whose cipher_suite field names another suite.
// Cases without the field (tree-math, deserialization, messages) decide in
// their kind.
func checkSuite(c fields) error {
	raw, ok := c["cipher_suite"]
	if !ok {
		return nil
	}
	var cs uint16
	if err := json.Unmarshal(raw, &cs); err != nil {
		return fmt.Errorf("cipher_suite: %w", err)
	}
	if cs != supportedSuite {
		return skipf("cipher suite %d is not supported", cs)
	}
	return nil
}
