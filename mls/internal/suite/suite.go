// Package suite implements the cryptographic functions of RFC 9420 Section 5
// for the one cipher suite Torpor speaks, 0x0001
// MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519: HKDF-SHA256 with the labelled
// ExpandWithLabel / DeriveSecret / DeriveTreeSecret, RefHash, HMAC-SHA256,
// Ed25519 SignWithLabel / VerifyWithLabel, HPKE base mode (DHKEM(X25519),
// HKDF-SHA256, AES-128-GCM) EncryptWithLabel / DecryptWithLabel, the KEM's
// DeriveKeyPair, and the AES-128-GCM AEAD used by the secret tree.
//
// Everything rests on the standard library (crypto/hpke, crypto/hkdf,
// crypto/hmac, crypto/ed25519, crypto/aes, crypto/cipher).
//
// Design: the package holds functions, not a suite object. Only one suite is
// supported, so an interface with one implementation would only add
// indirection; a second suite would turn these functions into methods of an
// unexported-method interface (a closed set). HPKE keys travel as bytes (the
// RFC 9180 SerializePrivateKey / SerializePublicKey forms), which is what the
// wire format, the test vectors and the stored group state all use.
package suite

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"

	"golang.org/x/crypto/cryptobyte"

	"github.com/torpor-dev/torpor/mls/internal/wire"
)

// ID is the cipher suite value of MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519,
// RFC 9420 Section 17.1.
const ID uint16 = 0x0001

// Sizes of the suite's primitives (RFC 9420 Section 5.1; RFC 9180 Section 7).
const (
	HashSize      = sha256.Size // KDF.Nh and the hash output length
	KeySize       = 16          // AEAD.Nk of AES-128-GCM
	NonceSize     = 12          // AEAD.Nn of AES-128-GCM
	TagSize       = 16          // AES-GCM authentication tag
	HPKEKeySize   = 32          // X25519 public and private keys
	KEMOutputSize = 32          // DHKEM(X25519) enc
	MaxExpand     = 255 * HashSize
)

// labelPrefix is prepended to every label, RFC 9420 Section 5.1.3 ff.
const labelPrefix = "MLS 1.0 "

// ErrDecrypt is the one opaque error of every decryption or verification
// failure in this package, as RFC 9420 leaves which check failed to the
// implementation and telling them apart only helps an attacker.
var ErrDecrypt = errors.New("mls: decryption failed")

// Hash returns SHA-256(data), the suite's hash function.
func Hash(data []byte) []byte {
	h := sha256.Sum256(data)
	return h[:]
}

// MAC returns HMAC-SHA256(key, data), the suite's MAC (RFC 9420 Section 5.1).
func MAC(key, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return m.Sum(nil)
}

// VerifyMAC reports, in constant time, whether tag is MAC(key, data).
func VerifyMAC(key, data, tag []byte) bool {
	return hmac.Equal(MAC(key, data), tag)
}

// Extract is KDF.Extract(salt, ikm) of HKDF-SHA256 (RFC 5869). A nil or
// empty salt means HashSize zero bytes, as RFC 5869 Section 2.2 prescribes.
func Extract(salt, ikm []byte) []byte {
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		// Only FIPS 140-only mode rejects inputs; Torpor does not run in it.
		panic("suite: HKDF-Extract: " + err.Error())
	}
	return prk
}

// Expand is KDF.Expand(secret, info, length) of HKDF-SHA256. It panics if
// length exceeds MaxExpand: every length in MLS is a constant of the suite
// except the exporter's, which checks it first.
func Expand(secret, info []byte, length int) []byte {
	if length > MaxExpand {
		panic("suite: HKDF-Expand length too large")
	}
	out, err := hkdf.Expand(sha256.New, secret, string(info), length)
	if err != nil {
		panic("suite: HKDF-Expand: " + err.Error())
	}
	return out
}

// ExpandWithLabel is RFC 9420 Section 5.1 ExpandWithLabel: HKDF-Expand with
// the KDFLabel struct {uint16 length; opaque label<V> = "MLS 1.0 " + label;
// opaque context<V>} as info. It panics if length exceeds MaxExpand.
func ExpandWithLabel(secret []byte, label string, context []byte, length int) []byte {
	info, err := wire.Marshal(func(b *cryptobyte.Builder) {
		b.AddUint16(uint16(length))
		wire.AddVarBytes(b, []byte(labelPrefix+label))
		wire.AddVarBytes(b, context)
	})
	if err != nil {
		panic("suite: encoding KDFLabel: " + err.Error())
	}
	return Expand(secret, info, length)
}

// DeriveSecret is RFC 9420 Section 5.1 DeriveSecret(secret, label) =
// ExpandWithLabel(secret, label, "", KDF.Nh).
func DeriveSecret(secret []byte, label string) []byte {
	return ExpandWithLabel(secret, label, nil, HashSize)
}

// DeriveTreeSecret is RFC 9420 Section 9 DeriveTreeSecret(secret, label,
// generation, length) = ExpandWithLabel(secret, label, uint32 generation,
// length).
func DeriveTreeSecret(secret []byte, label string, generation uint32, length int) []byte {
	var ctx [4]byte
	binary.BigEndian.PutUint32(ctx[:], generation)
	return ExpandWithLabel(secret, label, ctx[:], length)
}

// RefHash is RFC 9420 Section 5.2 RefHash(label, value) = Hash(RefHashInput)
// with RefHashInput = {opaque label<V>; opaque value<V>}. The label is used
// as given (no "MLS 1.0 " prefix is added; the RFC's labels carry it).
func RefHash(label string, value []byte) []byte {
	return Hash(labelled(label, value))
}

// KeyPackageRef is RFC 9420 Section 5.2 MakeKeyPackageRef over an encoded
// KeyPackage.
func KeyPackageRef(encodedKeyPackage []byte) []byte {
	return RefHash("MLS 1.0 KeyPackage Reference", encodedKeyPackage)
}

// ProposalRef is RFC 9420 Section 5.2 MakeProposalRef over an encoded
// AuthenticatedContent carrying a Proposal.
func ProposalRef(encodedAuthenticatedContent []byte) []byte {
	return RefHash("MLS 1.0 Proposal Reference", encodedAuthenticatedContent)
}

// labelled encodes struct {opaque label<V>; opaque data<V>}, the shape of
// RefHashInput, SignContent and EncryptContext.
func labelled(label string, data []byte) []byte {
	out, err := wire.Marshal(func(b *cryptobyte.Builder) {
		wire.AddVarBytes(b, []byte(label))
		wire.AddVarBytes(b, data)
	})
	if err != nil {
		panic("suite: encoding labelled struct: " + err.Error())
	}
	return out
}

// newAEAD returns AES-128-GCM keyed with key.
func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, ErrDecrypt
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Seal encrypts plaintext with AES-128-GCM (the suite's AEAD) under key and
// nonce, binding aad. key must be KeySize and nonce NonceSize bytes long.
func Seal(key, nonce, aad, plaintext []byte) ([]byte, error) {
	a, err := newAEAD(key)
	if err != nil || len(nonce) != NonceSize {
		return nil, errors.New("suite: bad AEAD key or nonce length")
	}
	return a.Seal(nil, nonce, plaintext, aad), nil
}

// Open decrypts ciphertext sealed by Seal. Every failure returns ErrDecrypt.
func Open(key, nonce, aad, ciphertext []byte) ([]byte, error) {
	a, err := newAEAD(key)
	if err != nil || len(nonce) != NonceSize {
		return nil, ErrDecrypt
	}
	pt, err := a.Open(nil, nonce, ciphertext, aad)
	if err != nil {
		return nil, ErrDecrypt
	}
	return pt, nil
}
