package ledger

import (
	"errors"
	"fmt"
)

// Errors of Reserve, Complete, Release and Reconcile. They reach callers
// wrapped in a *KeyError that carries the entry as it stands.
var (
	// ErrCompleted is returned by Reserve when the key already completed:
	// the effect ran and its receipt is in KeyError.Entry. The caller
	// answers with that receipt and must not run the effect again.
	ErrCompleted = errors.New("ledger: key already completed")
	// ErrIndeterminate is returned by Reserve (and Complete) when the key
	// was reserved by an earlier incarnation that never completed it: the
	// effect may or may not have happened. It is refused until an operator
	// reconciles the key; time never releases it.
	ErrIndeterminate = errors.New("ledger: key is indeterminate; reconcile it against the system of record")
	// ErrInFlight is returned by Reserve when this incarnation reserved the
	// key and has not completed it yet, and by Reconcile for such a key.
	ErrInFlight = errors.New("ledger: key is reserved and in flight")
	// ErrNotReserved is returned by Complete and Release for a key this
	// incarnation did not reserve, and by Reconcile for a key that is not
	// indeterminate.
	ErrNotReserved = errors.New("ledger: key is not reserved")
	// ErrNotFound is returned by Get and Reconcile for an unknown key.
	ErrNotFound = errors.New("ledger: key not found")
	// ErrNotStarted is for effects to wrap when they know they did not
	// start (the handler program could not be executed): Do then releases
	// the key instead of leaving it reserved.
	ErrNotStarted = errors.New("ledger: effect did not start")
	// ErrBadKey is returned for an empty key or one longer than MaxKeyLen.
	ErrBadKey = errors.New("ledger: invalid key")
)

// KeyError reports why an operation on a key was refused, with the entry as
// it stands in the ledger (zero when the key is unknown).
type KeyError struct {
	Op    string // "reserve", "complete", "release", "reconcile", "get"
	Entry Entry
	Err   error // one of the sentinels above
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("%v (op %s, key %q, state %s)", e.Err, e.Op, e.Entry.Key, e.Entry.State)
}

// Unwrap returns the sentinel.
func (e *KeyError) Unwrap() error { return e.Err }
