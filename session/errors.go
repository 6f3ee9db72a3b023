package session

import (
	"encoding/hex"
	"errors"
	"fmt"
)

// Errors of binding identities to MLS credentials (draft-chapman-a2a-mls-03
// Section 4.3).
var (
	// ErrBinding is matched by every *BindingError: a credential is not a
	// basic credential whose identity is a did:key holding exactly the
	// LeafNode's signature key.
	ErrBinding = errors.New("session: credential binding failed")

	// ErrIdentityMismatch is returned when a KeyPackage (or the answer that
	// carried it) names another agent than the one expected (draft Section
	// 6.2: the initiator aborts).
	ErrIdentityMismatch = errors.New("session: key package is not for the expected agent")
)

// Errors of the stored state (draft Section 6.4).
var (
	// ErrNoSession is returned when no session exists for a group ID or a
	// peer.
	ErrNoSession = errors.New("session: no such session")

	// ErrDropped is wrapped by the error of an operation that found its
	// group's stored state corrupt, truncated or undecodable: the session
	// was deleted in the caller's transaction (fail closed, never half
	// restored) and must be re-established. See CorruptError.
	ErrDropped = errors.New("session: stored state unusable; session dropped, re-establish it")

	// ErrGroupExists is returned when a Welcome or a new group would reuse
	// the ID of a group this agent already has (RFC 9420, Section
	// 12.4.3.1 leaves the check to the application).
	ErrGroupExists = errors.New("session: a group with this ID exists already")
)

// Errors of the KeyPackage pool (pool.go, lastresort.go).
var (
	// ErrWriteNeeded is returned by RefillChanged and LastResort given a
	// read-only transaction when the pool or the last-resort KeyPackage
	// needs a change (a KeyPackage to make, replace or delete): the
	// caller runs them again in a write transaction.
	ErrWriteNeeded = errors.New("session: the key packages need a write transaction")
)

// Errors of membership and the designated committer profile (draft Section
// 6.3).
var (
	// ErrNotCommitter is returned when a Commit comes from, or would be made
	// by, a member other than the group's designated committer (draft
	// Section 6.3.1).
	ErrNotCommitter = errors.New("session: commit not by the designated committer")

	// ErrNotMember is returned when a DID named in an operation is not a
	// member of the group.
	ErrNotMember = errors.New("session: not a member of the group")

	// ErrNoKeyPackage is returned when a Welcome names none of the
	// KeyPackages in this agent's pool (used already, expired, or never
	// ours).
	ErrNoKeyPackage = errors.New("session: welcome is for none of our key packages")

	// ErrStaleEpoch is returned for a message of an epoch the group has
	// left (RFC 9420 rejects it; draft Section 10.4, stale Commit replay).
	ErrStaleEpoch = errors.New("session: message of a past epoch")

	// ErrNotDelivered is returned by operations that send in a pair
	// session whose Welcome was never confirmed delivered.
	ErrNotDelivered = errors.New("session: the session's Welcome was not delivered")
)

// A BindingError says why a credential is not bound to its signature key
// (draft Section 4.3). It matches ErrBinding.
type BindingError struct {
	// Identity is the credential's identity as received (a DID when it
	// parses as one).
	Identity string
	// Reason says what is wrong.
	Reason string
}

func (e *BindingError) Error() string {
	return fmt.Sprintf("session: credential binding (draft-chapman-a2a-mls-03 §4.3) failed for %q: %s", e.Identity, e.Reason)
}

// Unwrap returns ErrBinding.
func (e *BindingError) Unwrap() error { return ErrBinding }

// A CorruptError describes a group whose stored state could not be used.
// It matches ErrDropped when the session was dropped because of it (in a
// writable transaction; a read-only one cannot drop it).
type CorruptError struct {
	Group   []byte // the group ID
	Peer    string // the pair session's peer DID, if known
	Field   string // the stored field at fault ("meta", "tree", "secrets", "state")
	Err     error  // what was wrong
	Dropped bool   // the session was deleted in the caller's transaction
}

func (e *CorruptError) Error() string {
	peer := ""
	if e.Peer != "" {
		peer = " with " + e.Peer
	}
	what := "session dropped, re-establish it"
	if !e.Dropped {
		what = "the session must be re-established"
	}
	return fmt.Sprintf("session: group %s%s: stored %s unusable: %v; %s",
		hex.EncodeToString(e.Group), peer, e.Field, e.Err, what)
}

// Unwrap returns the cause, and ErrDropped when the session was dropped.
func (e *CorruptError) Unwrap() []error {
	if e.Dropped {
		return []error{ErrDropped, e.Err}
	}
	return []error{e.Err}
}

// deferredError is an error the agent's drain leaves queued (a message for a
// group not joined yet, or for an epoch not reached yet): it has
// Deferred() bool (see runtime/drain.Deferred).
type deferredError struct{ err error }

func (e deferredError) Error() string  { return e.err.Error() }
func (e deferredError) Unwrap() error  { return e.err }
func (e deferredError) Deferred() bool { return true }

// ErrFutureEpoch is returned (wrapped in an error whose Deferred method
// reports true) for a message of an epoch the group has not reached yet:
// the Commit that leads there has not been processed.
var ErrFutureEpoch = errors.New("session: message of a future epoch")

// Deferred reports whether err asks for its message to be kept and retried
// later: a message for a group not joined yet or an epoch not reached yet.
func Deferred(err error) bool {
	var d interface{ Deferred() bool }
	return errors.As(err, &d) && d.Deferred()
}
