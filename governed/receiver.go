package governed

import (
	"errors"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
)

// DefaultMaxLifetime is the lifetime Receiver gives an object that
// declares no expiry, when Receiver.MaxLifetime is zero.
const DefaultMaxLifetime = 7 * 24 * time.Hour

// DefaultMaxExplicitLifetime caps a declared lifetime (ttlSeconds or
// expiresAt, from issuedAt) when Receiver.MaxExplicitLifetime is zero. The
// draft sets no upper bound; without one an object could hold a replay
// cache entry, or an undeliverable record, for as long as its sender likes.
const DefaultMaxExplicitLifetime = 30 * 24 * time.Hour

// ReplayCache records admitted (issuerDid, id) pairs (draft Section 8.2).
// An implementation bound to a store transaction makes Admit take effect
// only when that transaction commits; store/replay provides one.
type ReplayCache interface {
	// Seen reports whether (issuer, id) was admitted and is still retained
	// at now.
	Seen(issuer, id string, now time.Time) (bool, error)
	// Admit records (issuer, id), to be retained at least until
	// expiry, the object's effective expiry.
	Admit(issuer, id string, expiry time.Time) error
}

// Receiver runs the six ordered checks of draft Section 8.1 for one
// processing context. Its zero value accepts no purpose. Do not change it
// after use begins.
type Receiver struct {
	// Purposes is the allowlist of governance.purpose values, compared
	// exactly. It comes from the receiver's configuration for this context
	// and never from the object or its sender (Section 8.3).
	Purposes []string
	// AllowAnyPurpose accepts every purpose. The data-object extension
	// allows this deployment profile; the draft requires an allowlist, so
	// it must be chosen explicitly. An empty Purposes without it accepts
	// nothing.
	AllowAnyPurpose bool
	// MaxLifetime is the lifetime, from issuedAt, of an object that
	// declares no expiry; zero means DefaultMaxLifetime.
	MaxLifetime time.Duration
	// MaxExplicitLifetime caps the lifetime, from issuedAt, of an object
	// that declares an expiry: one declared later than issuedAt plus this
	// is treated as expiring then. Zero means DefaultMaxExplicitLifetime.
	MaxExplicitLifetime time.Duration
	// KnownSigners are DIDs whose keys are tried when a signature fails to
	// verify under the issuer's, to tell signature-not-by-issuer from
	// signature-invalid for operators. It does not affect acceptance.
	KnownSigners []did.DID
	// Clock tells the time; nil means clock.Real.
	Clock clock.Clock
}

// Input is what one object arrives with besides its bytes.
type Input struct {
	// Sender is the DID in the credential of the MLS member that sent the
	// message carrying the object (check 3), or the zero DID for
	// unencrypted carriage, which skips check 3.
	Sender did.DID
	// Replay is the replay cache, bound to the caller's transaction.
	Replay ReplayCache
}

// Accept parses b and runs the six checks in order. On success it records
// the object in in.Replay (which takes effect when the caller's transaction
// commits) and returns it. A failed check returns a *RejectError; a
// failing replay cache returns its error unchanged (not a rejection:
// Outward maps it to ErrProcessing).
func (r *Receiver) Accept(b []byte, in Input) (*Object, error) {
	o, err := Parse(b) // check 1
	if err != nil {
		return nil, err
	}
	if err := r.AcceptObject(o, in); err != nil {
		return nil, err
	}
	return o, nil
}

// AcceptObject is Accept for an object already parsed (check 1 passed).
func (r *Receiver) AcceptObject(o *Object, in Input) error {
	if in.Replay == nil {
		return errors.New("governed: no replay cache")
	}
	now := clock.Or(r.Clock).Now()
	if err := o.VerifySignature(append([]did.DID{in.Sender}, r.KnownSigners...)...); err != nil { // check 2
		return err
	}
	if !in.Sender.IsZero() && in.Sender != o.Issuer { // check 3
		return reject(ReasonSenderMismatch, "issuerDid %s is not the MLS sender %s", o.Issuer, in.Sender)
	}
	expiry := r.EffectiveExpiry(o)
	if !now.Before(expiry) { // check 4
		return reject(ReasonExpired, "expired at %s, now %s", expiry.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano))
	}
	seen, err := in.Replay.Seen(o.Issuer.String(), o.ID, now) // check 5
	if err != nil {
		return fmt.Errorf("governed: replay cache: %w", err)
	}
	if seen {
		return reject(ReasonReplay, "id %q already accepted from %s", truncate(o.ID), o.Issuer)
	}
	if !r.permitted(o.Governance.Purpose) { // check 6
		return reject(ReasonPurposeNotPermitted, "purpose %q is not in this context's allowlist", truncate(o.Governance.Purpose))
	}
	if err := in.Replay.Admit(o.Issuer.String(), o.ID, expiry); err != nil {
		return fmt.Errorf("governed: replay cache: %w", err)
	}
	return nil
}

// EffectiveExpiry returns the instant at which r considers o expired: its
// declared expiry (Object.Expiry) but no later than issuedAt plus
// MaxExplicitLifetime, or issuedAt plus MaxLifetime when it declares none.
func (r *Receiver) EffectiveExpiry(o *Object) time.Time {
	if t, ok := o.Expiry(); ok {
		if limit := o.IssuedAt.Add(orDefault(r.MaxExplicitLifetime, DefaultMaxExplicitLifetime)); t.After(limit) {
			return limit
		}
		return t
	}
	return o.IssuedAt.Add(orDefault(r.MaxLifetime, DefaultMaxLifetime))
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func (r *Receiver) permitted(purpose string) bool {
	if r.AllowAnyPurpose {
		return true
	}
	for _, p := range r.Purposes {
		if p == purpose {
			return true
		}
	}
	return false
}

// VerifySignature checks the signature under the key derived from issuerDid
// (draft Section 5.5; Section 4.1: the key comes from the identifier
// itself, never from a network). When it fails and one of others verifies
// it, the rejection reason is signature-not-by-issuer; otherwise it is
// signature-invalid. Zero DIDs in others are ignored.
func (o *Object) VerifySignature(others ...did.DID) error {
	if o.Issuer.Verify(o.signed, o.Signature) {
		return nil
	}
	for _, d := range others {
		if !d.IsZero() && d != o.Issuer && d.Verify(o.signed, o.Signature) {
			return reject(ReasonSignatureNotByIssuer, "signed by %s, not by issuerDid %s", d, o.Issuer)
		}
	}
	return reject(ReasonSignatureInvalid, "signature does not verify under the key of issuerDid %s", o.Issuer)
}
