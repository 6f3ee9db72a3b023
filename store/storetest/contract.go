package storetest

import (
	"path/filepath"
	"testing"
)

// Opener opens a store over one test's data: every call returns a new
// store over the same data, which the caller closes.
type Opener[S any] func(t *testing.T) S

// Check is one named check of a store interface's contract.
type Check[S any] struct {
	Name  string
	Check func(*testing.T, Opener[S])
}

// RunContract runs every check as a subtest, each over fresh data from
// newOpener: the contract suites of store/queue (queuetest) and
// store/agents (agentstest) run their checks with it against every
// engine.
func RunContract[S any](t *testing.T, checks []Check[S], newOpener func(t *testing.T) Opener[S]) {
	for _, c := range checks {
		t.Run(c.Name, func(t *testing.T) { c.Check(t, newOpener(t)) })
	}
}

// InDir is a newOpener for RunContract for a store kept in one file or
// directory, name, in a fresh temporary directory per check: a store
// opened again is open over the same path.
func InDir[S any](name string, open func(path string) (S, error)) func(t *testing.T) Opener[S] {
	return func(t *testing.T) Opener[S] {
		path := filepath.Join(t.TempDir(), name)
		return func(t *testing.T) S {
			s, err := open(path)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
}
