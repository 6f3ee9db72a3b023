// Package sessions plugs MLS sessions (package session) into the agent
// runtime: Sessions implements runtime/drain.Sessions, so that the drain
// applies handshake parts and opens MLS wire messages inside its batch
// transaction, and KeyPackages implements runtime.KeyPackages on the
// agent's bbolt file.
//
// It is a package of its own so that package session, which senders such
// as torporctl use too, does not depend on the runtime.
package sessions

import (
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// Sessions implements drain.Sessions with an agent's MLS sessions.
type Sessions struct {
	S *session.Sessions
}

var _ drain.Sessions = Sessions{}

// ErrInitiator is returned for a handshake whose initiatorDid is not the
// DID the relay proved for its sender.
var ErrInitiator = errors.New("sessions: handshake initiator is not its sender")

// ApplyHandshake implements drain.Sessions (draft-chapman-a2a-mls-03
// Section 7.6). A Welcome joins the group it admits this agent to, from the
// agent's KeyPackage pool, with the initiator as designated committer; the
// ratchet tree must match the Welcome. A commit-only object applies its
// Commit as one arriving on the MLS wire from the initiator would be. from,
// when known, must be the initiator: the relay proved it, and the
// initiator is the group's committer from now on.
func (a Sessions) ApplyHandshake(tx *bolt.Tx, h a2a.Handshake, from did.DID) error {
	if !from.IsZero() && from != h.InitiatorDID {
		return fmt.Errorf("%w: sent by %s, names %s", ErrInitiator, from, h.InitiatorDID)
	}
	if h.Welcome != nil {
		_, err := a.S.Join(tx, h.Welcome, h.RatchetTree, session.JoinOptions{
			Initiator: h.InitiatorDID, Policy: session.Policy{Committer: h.InitiatorDID},
		})
		return err
	}
	r, err := a.S.Process(tx, h.Commit, h.InitiatorDID)
	if err != nil {
		return err
	}
	if r.Kind != session.KindCommit {
		return fmt.Errorf("sessions: the handshake's commit member holds a %v", r.Kind)
	}
	return nil
}

// Open implements drain.Sessions (Section 7.5): it processes the MLS
// message in its group and returns, for an application message, the
// plaintext and the DID bound to the sender's credential (check 3 of
// Section 8.1 compares issuerDid with it). A Commit or a Proposal returns
// Opened.Commit true: both are handshake messages that change the group
// and carry no object. A message for a group not joined yet, or for an
// epoch not reached yet, returns an error drain.Deferred reports true for.
func (a Sessions) Open(tx *bolt.Tx, w a2a.MLSWire, from did.DID) (drain.Opened, error) {
	r, err := a.S.Process(tx, w.Wire, w.SenderDID)
	if err != nil {
		return drain.Opened{}, err
	}
	if r.Kind != session.KindApplication {
		return drain.Opened{Commit: true}, nil
	}
	return drain.Opened{Plaintext: r.Plaintext, Sender: r.Sender}, nil
}

// KeyPackages implements runtime.KeyPackages: the pool's private halves
// in the agent's bbolt file DB.
type KeyPackages struct {
	S  *session.Sessions
	DB DB
}

// DB is the agent's bbolt file, as KeyPackages uses it: *bolt.DB
// implements it.
type DB interface {
	View(func(*bolt.Tx) error) error
	Update(func(*bolt.Tx) error) error
}

// Refill makes sure target unused KeyPackages exist (target <= 0: the
// sessions' pool size) and returns the public halves not yet published.
// A full pool, as at most wakes, is found so in a read transaction.
func (k KeyPackages) Refill(ctx context.Context, target int) ([][]byte, error) {
	var kps [][]byte
	err := viewOrUpdate(k.DB, func(tx *bolt.Tx) (changed bool, err error) {
		kps, changed, err = k.S.RefillChanged(ctx, tx, target)
		return changed, err
	})
	return kps, err
}

// Published marks KeyPackages as given to the relay, and those the relay
// no longer holds (held: its state-ok's digests; nil: not said) as handed
// out. It returns how many were newly found handed out.
func (k KeyPackages) Published(ctx context.Context, kps [][]byte, held [][]byte) (int, error) {
	var n int
	err := updateIfWritten(k.DB, func(tx *bolt.Tx) (wrote bool, err error) {
		n, err = k.S.Published(tx, kps, held)
		// It writes the entries of kps, and those it finds handed out.
		return len(kps) > 0 || n > 0, err
	})
	return n, err
}

// LastResort implements runtime.LastResortKeyPackages: it makes or
// replaces the last-resort KeyPackage as due and returns it when the relay
// has not confirmed it (session.Sessions.LastResort). One that is not due,
// as at most wakes, is found so in a read transaction.
func (k KeyPackages) LastResort(ctx context.Context) ([]byte, error) {
	var kp []byte
	err := viewOrUpdate(k.DB, func(tx *bolt.Tx) (wrote bool, err error) {
		kp, wrote, err = k.S.LastResort(tx)
		return wrote, err
	})
	return kp, err
}

// LastResortHeld implements runtime.LastResortKeyPackages: digest is the
// last-resort KeyPackage the relay holds (session.Sessions.LastResortHeld).
func (k KeyPackages) LastResortHeld(ctx context.Context, digest []byte) error {
	return updateIfWritten(k.DB, func(tx *bolt.Tx) (bool, error) { return k.S.LastResortHeld(tx, digest) })
}

// errUnchanged rolls back a transaction that wrote nothing.
var errUnchanged = errors.New("sessions: unchanged")

// viewOrUpdate runs f in a read transaction and, only when f needs to
// write (session.ErrWriteNeeded), again in a write transaction
// (updateIfWritten): the pool is full and the last-resort KeyPackage
// current at most wakes, and a write transaction, even one rolled back,
// costs bbolt's writer lock and a freelist reloaded from the file.
func viewOrUpdate(db DB, f func(tx *bolt.Tx) (bool, error)) error {
	err := db.View(func(tx *bolt.Tx) error {
		_, err := f(tx)
		return err
	})
	if !errors.Is(err, session.ErrWriteNeeded) {
		return err
	}
	return updateIfWritten(db, f)
}

// updateIfWritten runs f in a write transaction and commits it only when
// f wrote something: a commit costs an fsync even when nothing changed,
// and the last-resort KeyPackage changes at few wakes.
func updateIfWritten(db DB, f func(tx *bolt.Tx) (bool, error)) error {
	err := db.Update(func(tx *bolt.Tx) error {
		wrote, err := f(tx)
		if err == nil && !wrote {
			return errUnchanged
		}
		return err
	})
	if errors.Is(err, errUnchanged) {
		return nil
	}
	return err
}
