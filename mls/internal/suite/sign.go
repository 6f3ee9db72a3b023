package suite

import (
	"crypto/ed25519"
	"errors"
	"io"
)

// SignaturePublicKeySize and SignatureSize are those of Ed25519.
const (
	SignaturePublicKeySize = ed25519.PublicKeySize
	SignatureSize          = ed25519.SignatureSize
	SignatureSeedSize      = ed25519.SeedSize
)

// ErrBadSignatureKey is returned when a signature private key has the wrong
// length.
var ErrBadSignatureKey = errors.New("mls: bad signature private key")

// SignWithLabel is RFC 9420 Section 5.1.2 SignWithLabel: Ed25519 over
// SignContent {opaque label<V> = "MLS 1.0 " + label; opaque content<V>}.
// priv is a 64-byte ed25519.PrivateKey.
func SignWithLabel(priv ed25519.PrivateKey, label string, content []byte) ([]byte, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, ErrBadSignatureKey
	}
	return ed25519.Sign(priv, labelled(labelPrefix+label, content)), nil
}

// VerifyWithLabel is RFC 9420 Section 5.1.2 VerifyWithLabel. It reports
// false for a public key or signature of the wrong length.
func VerifyWithLabel(pub []byte, label string, content, signature []byte) bool {
	if len(pub) != ed25519.PublicKeySize || len(signature) != ed25519.SignatureSize {
		return false
	}
	return ed25519.Verify(ed25519.PublicKey(pub), labelled(labelPrefix+label, content), signature)
}

// GenerateSignatureKey returns a fresh Ed25519 key pair drawn from rand
// (crypto/rand when nil).
func GenerateSignatureKey(rand io.Reader) (ed25519.PrivateKey, []byte, error) {
	seed := make([]byte, ed25519.SeedSize)
	if err := readRand(rand, seed); err != nil {
		return nil, nil, err
	}
	priv := ed25519.NewKeyFromSeed(seed)
	return priv, append([]byte{}, priv.Public().(ed25519.PublicKey)...), nil
}

// SignaturePublicKey returns the public key of priv.
func SignaturePublicKey(priv ed25519.PrivateKey) []byte {
	return append([]byte{}, priv.Public().(ed25519.PublicKey)...)
}
