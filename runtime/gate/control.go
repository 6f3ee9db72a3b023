package gate

import (
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/governed"
)

// Purposes of the owner's control objects. The runtime routes accepted
// objects with these purposes from the owner's DID to Control instead of
// the application.
const (
	PurposeHalt    = "torpor:halt"    // payload {"note": "..."}
	PurposeResume  = "torpor:resume"  // payload {"note": "..."}
	PurposeConfirm = "torpor:confirm" // payload {"hold": "<ledger key>"}
	PurposeDeny    = "torpor:deny"    // payload {"hold": "<ledger key>"}
)

// IsControl reports whether p is the purpose of an owner's control object
// (including torpor:policy).
func IsControl(p string) bool {
	switch p {
	case PurposePolicy, PurposeHalt, PurposeResume, PurposeConfirm, PurposeDeny:
		return true
	}
	return false
}

// HaltState is the owner's halt.
type HaltState struct {
	Halted bool      `cbor:"1,keyasint"`
	Since  time.Time `cbor:"2,keyasint"`
	Note   string    `cbor:"3,keyasint,omitempty"`
}

// Halt stops all autonomous action, in tx: from now on every consequential
// action is held. It stays in force across restarts and pulses until
// Resume. The runtime also cancels effects in flight when it calls Halt.
func (g *Gate) Halt(tx *bolt.Tx, note string) error {
	return g.putHalt(tx, HaltState{Halted: true, Since: g.clock.Now().UTC(), Note: note})
}

// Resume lifts the owner's halt, in tx. The caller then calls Redecide to
// run the held actions a policy allows.
func (g *Gate) Resume(tx *bolt.Tx, note string) error {
	return g.putHalt(tx, HaltState{Halted: false, Since: g.clock.Now().UTC(), Note: note})
}

// HaltState returns the halt in tx.
func (g *Gate) HaltState(tx *bolt.Tx) (HaltState, error) { return g.halt(tx) }

func (g *Gate) putHalt(tx *bolt.Tx, h HaltState) error {
	v, err := encMode.Marshal(h)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketGate).Put(keyHalt, v)
}

func (g *Gate) halt(tx *bolt.Tx) (HaltState, error) {
	var h HaltState
	v := tx.Bucket(bucketGate).Get(keyHalt)
	if v == nil {
		return h, nil
	}
	if err := cbor.Unmarshal(v, &h); err != nil {
		return h, fmt.Errorf("gate: decoding halt: %w", err)
	}
	return h, nil
}

// InstallPolicy makes the owner's policy in o the one in force, in tx,
// replacing the previous one (a policy with no rules revokes all
// unsupervised authority). o has passed the receiver checks. It returns an
// error wrapping ErrBadPolicy or ErrStalePolicy.
func (g *Gate) InstallPolicy(tx *bolt.Tx, o *governed.Object) (Policy, error) {
	p, err := ParsePolicy(o, g.cfg.Owner, g.cfg.Agent)
	if err != nil {
		return Policy{}, err
	}
	if cur, ok, err := g.policy(tx); err != nil {
		return Policy{}, err
	} else if ok && p.IssuedAt.Before(cur.IssuedAt) {
		return Policy{}, fmt.Errorf("%w: issued %s, the one in force %s", ErrStalePolicy, p.IssuedAt, cur.IssuedAt)
	}
	v, err := encMode.Marshal(p)
	if err != nil {
		return Policy{}, err
	}
	return p, tx.Bucket(bucketGate).Put(keyPolicy, v)
}

// Policy returns the policy in tx, expired or not; ok is false when none
// was installed.
func (g *Gate) Policy(tx *bolt.Tx) (p Policy, ok bool, err error) { return g.policy(tx) }

func (g *Gate) policy(tx *bolt.Tx) (Policy, bool, error) {
	var p Policy
	v := tx.Bucket(bucketGate).Get(keyPolicy)
	if v == nil {
		return p, false, nil
	}
	if err := cbor.Unmarshal(v, &p); err != nil {
		return p, false, fmt.Errorf("gate: decoding policy: %w", err)
	}
	return p, true, nil
}

// ControlResult says what a control object did.
type ControlResult struct {
	Purpose string
	// Run holds the actions to run after tx committed (a confirmation, or
	// those a resume or new policy released).
	Run []Held
	// Dropped is the held action a deny removed.
	Dropped *Held
	Policy  *Policy
}

// Control applies an owner's control object (purpose torpor:policy,
// torpor:halt, torpor:resume, torpor:confirm or torpor:deny) that passed
// the receiver checks, in tx. It returns an error wrapping ErrNotOwner for
// an object from anyone else, ErrUnknownControl for another purpose, and
// the errors of InstallPolicy, Confirm and Deny. now is the batch's
// trusted time, which Confirm and Redecide judge by.
func (g *Gate) Control(tx *bolt.Tx, o *governed.Object, now time.Time) (ControlResult, error) {
	res := ControlResult{Purpose: o.Governance.Purpose}
	if g.cfg.Owner.IsZero() || o.Issuer != g.cfg.Owner {
		return res, fmt.Errorf("%w: issuer %s", ErrNotOwner, o.Issuer)
	}
	var pl struct {
		Note string `json:"note"`
		Hold string `json:"hold"`
	}
	if o.Governance.Purpose != PurposePolicy {
		if err := decodeJSON(o.Payload, &pl); err != nil {
			return res, fmt.Errorf("%w: payload: %v", ErrBadControl, err)
		}
	}
	var err error
	switch o.Governance.Purpose {
	case PurposePolicy:
		var p Policy
		if p, err = g.InstallPolicy(tx, o); err == nil {
			res.Policy = &p
			res.Run, err = g.Redecide(tx, now)
		}
	case PurposeHalt:
		err = g.Halt(tx, pl.Note)
	case PurposeResume:
		if err = g.Resume(tx, pl.Note); err == nil {
			res.Run, err = g.Redecide(tx, now)
		}
	case PurposeConfirm:
		var h Held
		if h, err = g.Confirm(tx, pl.Hold, now); err == nil {
			res.Run = []Held{h}
		}
	case PurposeDeny:
		var h Held
		if h, err = g.Deny(tx, pl.Hold); err == nil {
			res.Dropped = &h
		}
	default:
		err = fmt.Errorf("%w: %q", ErrUnknownControl, o.Governance.Purpose)
	}
	return res, err
}
