package drain

import (
	"errors"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// Sessions is what the drain needs from the agent's MLS sessions (package
// session implements it): apply handshake parts and open MLS wire messages,
// with every state change made in the drain's bbolt transaction, so that a
// batch's MLS state, replay entries and ledger entries commit together.
//
// Neither method may keep state in memory that tx has not committed: the
// drain rolls the whole batch back on a store failure and processes it
// again later. An error that wraps a bbolt error or store.ErrFull (see
// StoreFailure) is such a failure: the drain rolls the batch back whatever
// tx holds. Any other error is the message's: the record is rejected (or
// deferred, see Deferred) and the batch commits, so such an error must
// leave tx unchanged, except for a change made on purpose that must
// commit with the batch: a corrupt session deleted to fail closed
// (draft-chapman-a2a-mls-03 Section 6.4; package session's ErrDropped).
type Sessions interface {
	// ApplyHandshake processes an MLS handshake part (draft Section 7.6):
	// joins the group a Welcome admits this agent to, after the credential
	// binding checks of Section 4.3, or applies a handshake Commit. from is
	// the DID the relay's transport token proved for the sender.
	ApplyHandshake(tx *bolt.Tx, h a2a.Handshake, from did.DID) error
	// Open processes an MLS wire message (Section 7.5). For an application
	// message it returns the decrypted plaintext and the DID in the
	// credential of the member that sent it (the identity check 3 of
	// Section 8.1 compares issuerDid with). For a Commit it applies it and
	// returns Opened.Commit true and no plaintext.
	//
	// An error for which Deferred reports true (a message for a group this
	// agent has not joined yet) leaves the record queued until its TTL;
	// any other error drains the record and reports it.
	Open(tx *bolt.Tx, w a2a.MLSWire, from did.DID) (Opened, error)
}

// Opened is a processed MLS wire message.
type Opened struct {
	// Plaintext is the application data: a JSON object whose member
	// "object" is a Governed Object (Section 7.5).
	Plaintext []byte
	// Sender is the credential identity of the sending member.
	Sender did.DID
	// Commit is true when the message was a Commit Open applied.
	Commit bool
}

// Deferred reports whether err asks for its record to stay queued: it (or
// an error it wraps) has a method Deferred() bool that returns true. A
// Sessions implementation returns such an error without importing this
// package.
func Deferred(err error) bool {
	var d interface{ Deferred() bool }
	return errors.As(err, &d) && d.Deferred()
}
