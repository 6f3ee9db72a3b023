// Package rollouts keeps the relay's update rollouts: one versioned record
// per rollout, changed only by compare-and-swap on its revision, so that
// relays sharing one store (store/jsstore) never overwrite each other's
// changes. The records are opaque here; transport/relay/rollout encodes
// them.
//
// Use:
//
//	s, err := rollouts.OpenBolt(path)     // or (*jsstore.Conn).Rollouts()
//	rev, err := s.Put(ctx, id, value, 0)  // create
//	value, rev, err = s.Get(ctx, id)
//	rev, err = s.Put(ctx, id, changed, rev) // ErrConflict if another wrote first
//	ids, err := s.List(ctx)
package rollouts

import (
	"context"
	"errors"
)

// Errors of Get and Put.
var (
	// ErrNotFound is returned by Get when no rollout has the id.
	ErrNotFound = errors.New("rollouts: no such rollout")
	// ErrConflict is returned by Put when the record's revision is not
	// the one given (another writer changed it first), or when creating
	// (revision 0) a record that exists.
	ErrConflict = errors.New("rollouts: revision conflict")
	// ErrTooLarge is returned by Put for a record over MaxRecord bytes.
	ErrTooLarge = errors.New("rollouts: record too large")
)

// MaxRecord bounds a record: it fits a JetStream message of the default
// 1 MiB maximum payload with room for its headers.
const MaxRecord = 1000 << 10

// MaxID bounds a rollout's id.
const MaxID = 64

// Store is the relay's rollouts. Revisions start at 1 and grow with each
// Put of a record.
type Store interface {
	// Get returns the record of id and its revision, or ErrNotFound.
	Get(ctx context.Context, id string) ([]byte, uint64, error)
	// Put writes the record of id if its revision is rev (0: if there is
	// none) and returns its new revision; ErrConflict otherwise.
	Put(ctx context.Context, id string, value []byte, rev uint64) (uint64, error)
	// List returns the ids of the rollouts, sorted.
	List(ctx context.Context) ([]string, error)
	Close() error
}

// CheckID returns an error if id is not a valid rollout id: 1 to MaxID
// bytes of letters, digits, '-', '_' and '.'.
func CheckID(id string) error {
	if id == "" || len(id) > MaxID {
		return errors.New("rollouts: an id must have 1 to 64 bytes")
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return errors.New("rollouts: an id has only letters, digits, '-', '_' and '.'")
		}
	}
	return nil
}

// check is what every Store's Put checks first.
func check(id string, value []byte) error {
	if err := CheckID(id); err != nil {
		return err
	}
	if len(value) > MaxRecord {
		return ErrTooLarge
	}
	return nil
}

// Check is Put's argument check, for Stores outside this package.
func Check(id string, value []byte) error { return check(id, value) }
