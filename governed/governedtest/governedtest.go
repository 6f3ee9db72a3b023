// Package governedtest provides an in-memory governed.ReplayCache for tests
// of code that runs the receiver checks without a store (production code
// uses store/replay, whose admissions survive restarts and commit with the
// caller's transaction), and signed objects shaped as operators' commands
// for the tests of the packages that carry them.
package governedtest

import (
	"sync"
	"time"
)

// Replay is an in-memory replay cache. Admissions take effect at once.
// It is safe for concurrent use.
type Replay struct {
	mu sync.Mutex
	// mu guards all following fields.
	until map[[2]string]time.Time
}

// NewReplay returns an empty cache.
func NewReplay() *Replay { return &Replay{until: map[[2]string]time.Time{}} }

// Seen implements governed.ReplayCache.
func (r *Replay) Seen(issuer, id string, now time.Time) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u, ok := r.until[[2]string{issuer, id}]
	return ok && u.After(now), nil
}

// Admit implements governed.ReplayCache.
func (r *Replay) Admit(issuer, id string, expiry time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.until[[2]string{issuer, id}] = expiry
	return nil
}

// Len returns the number of admitted pairs.
func (r *Replay) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.until)
}
