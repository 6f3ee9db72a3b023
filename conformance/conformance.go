// Package conformance runs conformance vectors written in the reference
// vector format (the Atom repository's spec/vectors; see
// testdata/vectors/atom/INDEX.md) through Torpor's real code paths and
// reports, per vector, what was expected and what happened.
//
// # Adding a kind
//
// Each vector kind is one file, kind_<name>.go, whose init function calls
// Register with the kind's name and a Handler:
//
//	func init() { conformance.Register("asleep-queue", runAsleepQueue) }
//
//	func runAsleepQueue(v *conformance.Vector) conformance.Result {
//		var in struct{ … }           // the vector's own members
//		if err := v.Decode(&in); err != nil {
//			return conformance.Broken(err)
//		}
//		… run the project's code, with stores under v.TempDir() …
//		return conformance.Compare(expected, got)
//	}
//
// A handler decodes the vector's raw JSON itself, runs the project's code
// (never a re-implementation of it in the handler), and returns a Result:
// Compare for the common "expected string equals got string" case, Skipped
// when the code the kind needs is not there yet, Broken when the vector
// itself cannot be read. A vector whose kind nothing registered fails, so a
// new kind in the vector format is never mistaken for a clean run. A kind
// whose code does not exist yet may be declared with Pending, which makes
// its vectors skip with a reason; a Register for the same kind replaces the
// pending entry. Likewise a vector whose expect names a member its kind
// does not define (expectMembers, in expect.go, lists them per kind as the
// reference runner checks them) fails before its handler runs: an
// expectation nobody understands is never passed over. A handler checks
// every member in its kind's list.
//
// Registration happens in init functions only (the one use of init the
// project allows: compile-time registration); running is free of globals
// otherwise.
//
// # Deliberate deviations
//
// Where Torpor deliberately does otherwise than a reference vector expects
// (kind_dequeue.go's dequeueDeviations: an opaque record is refused and
// acknowledged rather than left queued), the handler compares against
// Torpor's own expectation, so the vector can still fail, and its Note
// names the reference's expectation and why.
//
// # Verdict strings
//
// Results print as "accept" or "reject(<reason>)", and sequences as the
// steps joined with commas, so that expected and got read alike. A vector
// that states only "reject" without a reason matches any rejection.
package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Handler runs one vector of its kind.
type Handler func(v *Vector) Result

// Status is a vector's outcome.
type Status string

// The outcomes.
const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	Skip Status = "SKIP"
)

// Result is what a handler reports.
type Result struct {
	Status   Status `json:"status"`
	Expected string `json:"expected"`
	Got      string `json:"got"`
	// Note explains a skip or a failure (an error from the code under
	// test, or why the kind is not run).
	Note string `json:"note,omitempty"`
}

// Compare passes when got equals expected.
func Compare(expected, got string) Result {
	r := Result{Status: Fail, Expected: expected, Got: got}
	if expected == got {
		r.Status = Pass
	}
	return r
}

// Skipped reports a vector that was not run, and why.
func Skipped(reason string) Result { return Result{Status: Skip, Note: reason} }

// Broken reports a vector that could not be run because it is malformed;
// that is a failure.
func Broken(err error) Result {
	return Result{Status: Fail, Got: "error", Note: "cannot read vector: " + err.Error()}
}

// ErrNoVectors is returned (wrapped) by Run when it finds no vector file.
var ErrNoVectors = errors.New("conformance: no vectors found")

type entry struct {
	h       Handler
	pending bool
}

var (
	mu sync.Mutex
	// mu guards registry.
	registry = map[string]entry{}
)

// Register makes h run every vector of kind. It replaces a Pending entry
// for the kind and panics if another handler is already registered, so two
// files cannot silently claim one kind. Call it from init.
func Register(kind string, h Handler) {
	mu.Lock()
	defer mu.Unlock()
	if e, ok := registry[kind]; ok && !e.pending {
		panic(fmt.Sprintf("conformance: kind %q registered twice", kind))
	}
	registry[kind] = entry{h: h}
}

// Pending records that kind exists in the vector format but the code it
// needs is not there yet: its vectors SKIP with reason, until a Register
// for the kind replaces this.
func Pending(kind, reason string) {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := registry[kind]; ok {
		return // a real handler registered first
	}
	registry[kind] = entry{h: func(*Vector) Result { return Skipped(reason) }, pending: true}
}

// Kinds returns the registered kinds and whether each runs (false: pending).
func Kinds() map[string]bool {
	mu.Lock()
	defer mu.Unlock()
	out := map[string]bool{}
	for k, e := range registry {
		out[k] = !e.pending
	}
	return out
}

func handler(kind string) (Handler, bool) {
	mu.Lock()
	defer mu.Unlock()
	e, ok := registry[kind]
	return e.h, ok
}

func sortedKinds() []string {
	k := Kinds()
	out := make([]string, 0, len(k))
	for n := range k {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Decode unmarshals the vector's JSON into dst.
func (v *Vector) Decode(dst any) error { return json.Unmarshal(v.Raw, dst) }
