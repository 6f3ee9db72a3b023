// Package did implements the did:key method for Ed25519 keys, the Agent
// Identity of draft-chapman-a2a-mls-03 Section 4.1.
//
// A DID is "did:key:" followed by the multibase base58btc encoding (prefix
// "z") of the multicodec ed25519-pub header 0xed 0x01 and the 32-byte public
// key. The key is always derived from the identifier itself; nothing here
// resolves an identifier over a network, so an object signed by a DID stays
// verifiable offline and after its issuer is gone. Every other DID method,
// multibase, multicodec or key length is an error.
package did

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
)

const (
	prefix = "did:key:"
	// multicodec ed25519-pub, varint encoded.
	codec0, codec1 = 0xed, 0x01
)

// ErrNotDIDKey is returned (wrapped) for an identifier that is not a
// did:key Ed25519 DID.
var ErrNotDIDKey = errors.New("did: not an Ed25519 did:key")

// DID is a parsed did:key identifier. The zero value is not a valid DID.
type DID struct {
	s   string
	pub [ed25519.PublicKeySize]byte
}

// Parse parses s as a did:key Ed25519 identifier and derives its public key.
// It returns an error wrapping ErrNotDIDKey for any other method or for
// malformed input.
func Parse(s string) (DID, error) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return DID{}, fmt.Errorf("%w: %q does not start with %q", ErrNotDIDKey, truncate(s), prefix)
	}
	mb, ok := strings.CutPrefix(rest, "z")
	if !ok {
		return DID{}, fmt.Errorf("%w: multibase prefix must be 'z' (base58btc)", ErrNotDIDKey)
	}
	raw, err := decodeBase58(mb)
	if err != nil {
		return DID{}, fmt.Errorf("%w: %v", ErrNotDIDKey, err)
	}
	if len(raw) < 2 || raw[0] != codec0 || raw[1] != codec1 {
		return DID{}, fmt.Errorf("%w: multicodec header is not ed25519-pub (0xed01)", ErrNotDIDKey)
	}
	if len(raw) != 2+ed25519.PublicKeySize {
		return DID{}, fmt.Errorf("%w: key is %d bytes, want %d", ErrNotDIDKey, len(raw)-2, ed25519.PublicKeySize)
	}
	d := DID{}
	copy(d.pub[:], raw[2:])
	// Re-encode so that only the canonical spelling is accepted (base58
	// has no alternative spellings, but leading zero bytes are subtle).
	d.s = encode(d.pub[:])
	if d.s != s {
		return DID{}, fmt.Errorf("%w: non-canonical encoding", ErrNotDIDKey)
	}
	return d, nil
}

// MustParse is like Parse but panics on error. It is for tests and
// constants.
func MustParse(s string) DID {
	d, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return d
}

// FromPublicKey returns the DID of an Ed25519 public key. It returns an
// error if pub is not 32 bytes.
func FromPublicKey(pub ed25519.PublicKey) (DID, error) {
	if len(pub) != ed25519.PublicKeySize {
		return DID{}, fmt.Errorf("did: public key is %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	d := DID{}
	copy(d.pub[:], pub)
	d.s = encode(d.pub[:])
	return d, nil
}

func encode(pub []byte) string {
	raw := make([]byte, 0, 2+len(pub))
	raw = append(raw, codec0, codec1)
	raw = append(raw, pub...)
	return prefix + "z" + encodeBase58(raw)
}

// String returns the identifier, "did:key:z6Mk…".
func (d DID) String() string { return d.s }

// IsZero reports whether d is the zero DID.
func (d DID) IsZero() bool { return d.s == "" }

// PublicKey returns a copy of the Ed25519 public key the DID encodes.
func (d DID) PublicKey() ed25519.PublicKey {
	return append(ed25519.PublicKey(nil), d.pub[:]...)
}

// Verify reports whether sig is a valid Ed25519 signature (RFC 8032) of msg
// by the DID's key.
func (d DID) Verify(msg, sig []byte) bool {
	if d.IsZero() {
		return false
	}
	return ed25519.Verify(d.pub[:], msg, sig)
}

// MatchesKey reports whether pub equals the DID's key octet for octet
// (draft-chapman-a2a-mls-03 Section 4.3, credential binding).
func (d DID) MatchesKey(pub []byte) bool {
	return !d.IsZero() && len(pub) == ed25519.PublicKeySize && string(pub) == string(d.pub[:])
}

// MarshalText implements encoding.TextMarshaler.
func (d DID) MarshalText() ([]byte, error) {
	if d.IsZero() {
		return nil, errors.New("did: marshaling zero DID")
	}
	return []byte(d.s), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *DID) UnmarshalText(b []byte) error {
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	*d = p
	return nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
