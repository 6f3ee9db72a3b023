// Package pulse makes and checks the agent's liveness pulses: small signed
// documents, one per wake, each chained to the previous one by hash and
// carrying the next wake the agent expects (the Autonomy Envelope
// proposal's "signed pulses chained to the agent's log head").
//
// A pulse proves recent use of the device key and nothing more: it does not
// show that the key is uncompromised, and it never lifts an owner's halt
// (runtime/gate keeps the halt until an explicit resume). What it gives a
// counterparty, and the agent's own action gate, is evidence that the agent
// is alive and when it next expects to be, so that authority conditioned on
// liveness can suspend when the pulses stop.
//
// # Format
//
// A pulse is a JSON object, published and stored as its RFC 8785 (JCS)
// canonical form:
//
//	{"agent":"did:key:z6Mk…","at":"2026-01-15T14:11:00.000Z","mode":"hourly_wake",
//	 "nextWake":"2026-01-15T15:11:00.000Z","prev":"<base64url SHA-256>","seq":42,
//	 "signature":"<base64 Ed25519>","v":1}
//
// The signature is Ed25519 by the agent's did:key over the JCS form of the
// object without "signature", encoded like a Governed Object's (standard
// base64 with padding). "prev" is the unpadded base64url SHA-256 of the
// previous pulse's canonical bytes (absent on the first pulse, seq 1), so
// the chain is a hash chain over exactly what was published. "halted" is
// true while the owner's halt is in force. The relay serves the latest
// pulse verbatim next to the Agent Card (GET /a/{did}/pulse).
package pulse

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/internal/jcs"

	"github.com/torpor-dev/torpor/did"
)

// Version is the pulse format version.
const Version = 1

// MaxSize bounds a pulse document; the relay refuses larger ones.
const MaxSize = 4 << 10

// timeFormat is RFC 3339 in UTC with milliseconds, as Governed Objects use.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// Errors of Parse and VerifyNext.
var (
	// ErrMalformed is returned (wrapped) for a document that is not a
	// well-formed canonical pulse.
	ErrMalformed = errors.New("pulse: malformed")
	// ErrSignature is returned when the signature does not verify under the
	// agent's key.
	ErrSignature = errors.New("pulse: signature invalid")
	// ErrBrokenChain is returned by VerifyNext when a pulse does not follow
	// the one before it.
	ErrBrokenChain = errors.New("pulse: chain broken")
)

// Pulse is one liveness pulse.
type Pulse struct {
	Agent    did.DID
	Seq      uint64
	Prev     string    // hash of the previous pulse; empty for seq 1
	At       time.Time // when the agent made it (wall clock)
	NextWake time.Time // zero when no wake is planned (sleep mode)
	Mode     string
	Halted   bool
}

// wire is the JSON form.
type wire struct {
	V         int    `json:"v"`
	Agent     string `json:"agent"`
	Seq       uint64 `json:"seq"`
	Prev      string `json:"prev,omitempty"`
	At        string `json:"at"`
	NextWake  string `json:"nextWake,omitempty"`
	Mode      string `json:"mode"`
	Halted    bool   `json:"halted,omitempty"`
	Signature string `json:"signature,omitempty"`
}

func (p Pulse) wire() wire {
	w := wire{V: Version, Agent: p.Agent.String(), Seq: p.Seq, Prev: p.Prev,
		At: p.At.UTC().Format(timeFormat), Mode: p.Mode, Halted: p.Halted}
	if !p.NextWake.IsZero() {
		w.NextWake = p.NextWake.UTC().Format(timeFormat)
	}
	return w
}

// Sign returns the canonical signed document of p, signed by key. p.Agent
// must be key's DID.
func Sign(key *did.PrivateKey, p Pulse) ([]byte, error) {
	if p.Agent != key.DID() {
		return nil, fmt.Errorf("pulse: agent %s is not the signing key's %s", p.Agent, key.DID())
	}
	w := p.wire()
	msg, err := canonical(w)
	if err != nil {
		return nil, err
	}
	w.Signature = base64.StdEncoding.EncodeToString(key.Sign(msg))
	return canonical(w)
}

// Parse checks that doc is a canonical pulse signed by the agent it names
// and returns it. It returns errors wrapping ErrMalformed or ErrSignature.
func Parse(doc []byte) (Pulse, error) {
	if len(doc) > MaxSize {
		return Pulse{}, fmt.Errorf("%w: %d bytes exceeds %d", ErrMalformed, len(doc), MaxSize)
	}
	var w wire
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Pulse{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if c, err := canonical(w); err != nil || !bytes.Equal(c, doc) {
		return Pulse{}, fmt.Errorf("%w: not in canonical (RFC 8785) form", ErrMalformed)
	}
	p, err := w.pulse()
	if err != nil {
		return Pulse{}, err
	}
	sig, err := base64.StdEncoding.DecodeString(w.Signature)
	if err != nil {
		return Pulse{}, fmt.Errorf("%w: signature: %v", ErrMalformed, err)
	}
	w.Signature = ""
	msg, err := canonical(w)
	if err != nil {
		return Pulse{}, err
	}
	if !p.Agent.Verify(msg, sig) {
		return Pulse{}, ErrSignature
	}
	return p, nil
}

func (w wire) pulse() (Pulse, error) {
	if w.V != Version {
		return Pulse{}, fmt.Errorf("%w: version %d, want %d", ErrMalformed, w.V, Version)
	}
	agent, err := did.Parse(w.Agent)
	if err != nil {
		return Pulse{}, fmt.Errorf("%w: agent: %v", ErrMalformed, err)
	}
	p := Pulse{Agent: agent, Seq: w.Seq, Prev: w.Prev, Mode: w.Mode, Halted: w.Halted}
	if p.Seq == 0 || (p.Seq == 1) != (p.Prev == "") {
		return Pulse{}, fmt.Errorf("%w: seq %d with prev %q", ErrMalformed, p.Seq, p.Prev)
	}
	if p.At, err = time.Parse(time.RFC3339Nano, w.At); err != nil {
		return Pulse{}, fmt.Errorf("%w: at: %v", ErrMalformed, err)
	}
	if w.NextWake != "" {
		if p.NextWake, err = time.Parse(time.RFC3339Nano, w.NextWake); err != nil {
			return Pulse{}, fmt.Errorf("%w: nextWake: %v", ErrMalformed, err)
		}
	}
	return p, nil
}

// Hash returns the chain hash of a pulse document: unpadded base64url of
// its SHA-256.
func Hash(doc []byte) string {
	h := sha256.Sum256(doc)
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// VerifyNext checks that next follows prev: both valid, same agent, the
// next sequence number, prev's hash, and time not running backwards. It
// returns an error wrapping ErrBrokenChain, ErrMalformed or ErrSignature.
func VerifyNext(prev, next []byte) error {
	p, err := Parse(prev)
	if err != nil {
		return fmt.Errorf("previous pulse: %w", err)
	}
	n, err := Parse(next)
	if err != nil {
		return err
	}
	switch {
	case n.Agent != p.Agent:
		return fmt.Errorf("%w: agent changed from %s to %s", ErrBrokenChain, p.Agent, n.Agent)
	case n.Seq != p.Seq+1:
		return fmt.Errorf("%w: seq %d after %d", ErrBrokenChain, n.Seq, p.Seq)
	case n.Prev != Hash(prev):
		return fmt.Errorf("%w: prev hash does not match pulse %d", ErrBrokenChain, p.Seq)
	case n.At.Before(p.At):
		return fmt.Errorf("%w: pulse %d is older than pulse %d", ErrBrokenChain, n.Seq, p.Seq)
	}
	return nil
}

func canonical(w wire) ([]byte, error) {
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("pulse: encoding: %w", err)
	}
	c, err := jcs.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return c, nil
}
