package session

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"unicode/utf8"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/mls"
)

// Credential binding, draft-chapman-a2a-mls-03 Section 4.3: an agent's MLS
// credential is a basic credential whose identity is the UTF-8 encoding of
// its did:key, and the LeafNode's signature_key is, octet for octet, the
// Ed25519 key inside that DID.
//
// CheckCredential is installed as mls.Config.ValidateCredential (the
// Authentication Service of RFC 9420, Section 5.3.1), which package mls
// calls for every credential entering a group before anything changes:
// KeyPackages (verified, added by us or in received Add proposals), Update
// proposals, the LeafNode of every UpdatePath (including an external
// join's), and every leaf of the ratchet tree a Welcome or an external
// join brings. CheckKeyPackage adds the expected-identity check of Section
// 6.2 for KeyPackages fetched from a relay.
//
// A member's DID is its signature key, so it can never change: validateSuccessor
// is installed as mls.Config.ValidateSuccessor (RFC 9420, Section 5.3.1),
// which package mls calls when an Update (Section 12.1.2) or the LeafNode
// of a Commit's UpdatePath (Section 12.4.2) replaces a member's leaf, and
// refuses a new credential that names another DID than the old one.

// NewCredential returns the basic credential of id (Section 4.3).
func NewCredential(id did.DID) mls.Credential {
	return mls.NewBasicCredential([]byte(id.String()))
}

// CheckCredential returns the DID a credential binds to signatureKey, or a
// *BindingError: the credential is not basic, its identity is not valid
// UTF-8 or not an Ed25519 did:key, or the key in the DID differs from
// signatureKey.
func CheckCredential(c mls.Credential, signatureKey []byte) (did.DID, error) {
	if c.Type != mls.CredentialTypeBasic {
		return did.DID{}, &BindingError{Identity: "", Reason: fmt.Sprintf("credential type %d is not basic", c.Type)}
	}
	if !utf8.Valid(c.Identity) {
		return did.DID{}, &BindingError{Identity: fmt.Sprintf("%x", c.Identity), Reason: "identity is not UTF-8"}
	}
	ident := string(c.Identity)
	id, err := did.Parse(ident)
	if err != nil {
		return did.DID{}, &BindingError{Identity: ident, Reason: err.Error()}
	}
	if len(signatureKey) != ed25519.PublicKeySize || !id.MatchesKey(signatureKey) {
		return did.DID{}, &BindingError{Identity: ident,
			Reason: "LeafNode signature_key " + shortHex(signatureKey) + " is not the key inside the DID"}
	}
	return id, nil
}

// validateCredential adapts CheckCredential to mls.Config.ValidateCredential.
func validateCredential(c mls.Credential, signatureKey []byte) error {
	_, err := CheckCredential(c, signatureKey)
	return err
}

// validateSuccessor is mls.Config.ValidateSuccessor: the credential
// replacing a member's must name the same DID (its binding to the new
// signature key was checked by validateCredential before).
func validateSuccessor(old, new mls.Credential) error {
	if old.Type == new.Type && bytes.Equal(old.Identity, new.Identity) {
		return nil
	}
	return identityChanged(string(old.Identity), string(new.Identity))
}

// identityChanged is the error for a leaf of member old that would be
// replaced by one bound to new.
func identityChanged(old, new string) *BindingError {
	if old == "" {
		return &BindingError{Identity: new, Reason: "would replace a leaf with no bound DID"}
	}
	return &BindingError{Identity: new, Reason: "would replace the leaf of " + old + ": a member's DID cannot change"}
}

// leafDID returns the DID bound to a LeafNode.
func leafDID(l *mls.LeafNode) (did.DID, error) {
	return CheckCredential(l.Credential, l.SignatureKey)
}

// CheckKeyPackage verifies a KeyPackage (RFC 9420, Section 10.1, with cfg's
// lifetime policy) and its credential binding, and returns the DID it
// binds. When want is not the zero DID, a KeyPackage for any other agent is
// rejected with ErrIdentityMismatch (draft Section 6.2).
func CheckKeyPackage(cfg *mls.Config, kp *mls.KeyPackage, want did.DID) (did.DID, error) {
	id, err := leafDID(&kp.LeafNode)
	if err != nil {
		return did.DID{}, err
	}
	if !want.IsZero() && id != want {
		return did.DID{}, fmt.Errorf("%w: its credential names %s, expected %s", ErrIdentityMismatch, id, want)
	}
	c := *cfg
	c.ValidateCredential = validateCredential
	if err := kp.Verify(&c); err != nil {
		return did.DID{}, fmt.Errorf("session: key package of %s: %w", id, err)
	}
	return id, nil
}

// ParseKeyPackage decodes a KeyPackage, MLSMessage-wrapped (as relays serve
// them) or bare.
func ParseKeyPackage(b []byte) (*mls.KeyPackage, error) {
	if m, err := mls.ParseMLSMessage(b); err == nil {
		if m.WireFormat != mls.WireFormatKeyPackage {
			return nil, fmt.Errorf("session: MLSMessage of wire format %d, want a key package", m.WireFormat)
		}
		return m.KeyPackage, nil
	}
	return mls.ParseKeyPackage(b)
}

func shortHex(b []byte) string {
	if len(b) > 8 {
		return hex.EncodeToString(b[:8]) + "…"
	}
	return hex.EncodeToString(b)
}

// NewKeyPackage makes a KeyPackage for key's DID as every Torpor agent
// does (the basic credential of NewCredential, signed by the DID's key;
// RFC 9420, Section 10) and returns it wrapped in an MLSMessage (Section
// 6), the form the relay serves, with the KeyPackage and its private keys.
func NewKeyPackage(cfg *mls.Config, key *did.PrivateKey) ([]byte, *mls.KeyPackage, *mls.KeyPackagePrivate, error) {
	kp, priv, err := mls.NewKeyPackage(cfg, NewCredential(key.DID()), key.Ed25519())
	if err != nil {
		return nil, nil, nil, err
	}
	wire, err := (&mls.MLSMessage{Version: mls.ProtocolMLS10, WireFormat: mls.WireFormatKeyPackage, KeyPackage: kp}).Marshal()
	if err != nil {
		return nil, nil, nil, err
	}
	return wire, kp, priv, nil
}
