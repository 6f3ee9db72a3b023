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
//	ids, err := s.List(ctx)               // keys: ids, and tenants' Key(tenant, id)
package rollouts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
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

// Store is the relay's rollouts, each under its key (Key: its id, or for
// a tenant's rollout its tenant's key). Revisions start at 1 and grow
// with each Put of a record.
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

// tenantKeyPrefix starts the key of a tenant's rollout. A rollout id
// has no '/', so no id of the relay's own rollouts is a tenant's key.
const tenantKeyPrefix = "tenant/"

// Key is the key a rollout is stored under: its id for the relay's own
// rollouts (tenant empty), else "tenant/", the first 16 bytes of the
// SHA-256 of the tenant's owner DID in hex, "/" and the id. Each tenant's
// rollouts thus have ids of their own: two tenants, or a tenant and the
// relay, may each have a rollout "v2", and none learns of the other's.
func Key(tenant, id string) string {
	if tenant == "" {
		return id
	}
	h := sha256.Sum256([]byte(tenant))
	return tenantKeyPrefix + hex.EncodeToString(h[:16]) + "/" + id
}

// CheckKey returns an error if key is neither a valid id (CheckID) nor a
// tenant's rollout's key (Key).
func CheckKey(key string) error {
	rest, ok := strings.CutPrefix(key, tenantKeyPrefix)
	if !ok {
		return CheckID(key)
	}
	h, id, ok := strings.Cut(rest, "/")
	if _, err := hex.DecodeString(h); !ok || len(h) != 32 || err != nil || strings.ToLower(h) != h {
		return errors.New("rollouts: a tenant's rollout key is tenant/, 32 lower-case hex digits, / and the id")
	}
	return CheckID(id)
}

// check is what every Store's Put checks first.
func check(id string, value []byte) error {
	if err := CheckKey(id); err != nil {
		return err
	}
	if len(value) > MaxRecord {
		return ErrTooLarge
	}
	return nil
}

// Check is Put's argument check, for Stores outside this package.
func Check(id string, value []byte) error { return check(id, value) }
