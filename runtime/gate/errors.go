package gate

import (
	"errors"

	"github.com/torpor-dev/torpor/store/ledger"
)

// Errors of the gate.
var (
	// ErrBadPolicy is returned (wrapped) by ParsePolicy and InstallPolicy
	// for an object that is not a valid policy for this agent from its
	// owner.
	ErrBadPolicy = errors.New("gate: invalid policy")
	// ErrStalePolicy is returned by InstallPolicy for a policy issued
	// before the one in force.
	ErrStalePolicy = errors.New("gate: policy older than the one in force")
	// ErrNoHold is returned (wrapped) by Confirm and Deny for a key that
	// is not held.
	ErrNoHold = errors.New("gate: no such held action")
	// ErrExpired is returned (wrapped) by Confirm when the held object
	// expired; Sweep drops the hold.
	ErrExpired = errors.New("gate: held action expired")
	// ErrNotOwner is returned (wrapped) by Control for an object not
	// issued by the owner.
	ErrNotOwner = errors.New("gate: control object not issued by the owner")
	// ErrBadControl is returned (wrapped) by Control for a control object
	// whose payload it cannot read.
	ErrBadControl = errors.New("gate: malformed control object")
	// ErrUnknownControl is returned (wrapped) by Control for a purpose it
	// does not handle.
	ErrUnknownControl = errors.New("gate: not a control purpose")
)

func isNotFound(err error) bool { return errors.Is(err, ledger.ErrNotFound) }
