package suite

import (
	"crypto/ecdh"
	"crypto/hpke"
	cryptorand "crypto/rand"
	"io"
)

var kem = hpke.DHKEM(ecdh.X25519())

// EncryptWithLabel is RFC 9420 Section 5.1.3 EncryptWithLabel: HPKE
// SealBase(pub, EncryptContext, "", plaintext) with EncryptContext =
// {opaque label<V> = "MLS 1.0 " + label; opaque context<V>}. The ephemeral
// key comes from crypto/rand (crypto/hpke offers no other source; tests use
// testing/cryptotest.SetGlobalRandom).
func EncryptWithLabel(pub []byte, label string, context, plaintext []byte) (kemOutput, ciphertext []byte, err error) {
	pk, err := kem.NewPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	enc, s, err := hpke.NewSender(pk, hpke.HKDFSHA256(), hpke.AES128GCM(), labelled(labelPrefix+label, context))
	if err != nil {
		return nil, nil, err
	}
	ct, err := s.Seal(nil, plaintext)
	if err != nil {
		return nil, nil, err
	}
	return enc, ct, nil
}

// DecryptWithLabel is RFC 9420 Section 5.1.3 DecryptWithLabel: HPKE
// OpenBase. Every failure, including a malformed key or KEM output, returns
// ErrDecrypt.
func DecryptWithLabel(priv []byte, label string, context, kemOutput, ciphertext []byte) ([]byte, error) {
	sk, err := kem.NewPrivateKey(priv)
	if err != nil {
		return nil, ErrDecrypt
	}
	r, err := hpke.NewRecipient(kemOutput, sk, hpke.HKDFSHA256(), hpke.AES128GCM(), labelled(labelPrefix+label, context))
	if err != nil {
		return nil, ErrDecrypt
	}
	pt, err := r.Open(nil, ciphertext)
	if err != nil {
		return nil, ErrDecrypt
	}
	return pt, nil
}

// DeriveKeyPair is the KEM's DeriveKeyPair(ikm) (RFC 9180 Section 7.1.3)
// used for tree node keys (RFC 9420 Section 7.4) and external_pub (Section
// 8.3). It returns the serialized private and public keys.
func DeriveKeyPair(ikm []byte) (priv, pub []byte, err error) {
	sk, err := kem.DeriveKeyPair(ikm)
	if err != nil {
		return nil, nil, err
	}
	priv, err = sk.Bytes()
	if err != nil {
		return nil, nil, err
	}
	return priv, sk.PublicKey().Bytes(), nil
}

// GenerateKeyPair returns a fresh HPKE key pair: DeriveKeyPair over HashSize
// bytes of rand (crypto/rand when nil), so an injected reader makes it
// deterministic.
func GenerateKeyPair(rand io.Reader) (priv, pub []byte, err error) {
	ikm := make([]byte, HashSize)
	if err := readRand(rand, ikm); err != nil {
		return nil, nil, err
	}
	return DeriveKeyPair(ikm)
}

// PublicKey returns the public key of the serialized HPKE private key priv.
func PublicKey(priv []byte) ([]byte, error) {
	sk, err := kem.NewPrivateKey(priv)
	if err != nil {
		return nil, err
	}
	return sk.PublicKey().Bytes(), nil
}

// ValidPublicKey reports whether pub is a well-formed X25519 public key.
func ValidPublicKey(pub []byte) bool {
	_, err := kem.NewPublicKey(pub)
	return err == nil
}

func readRand(rand io.Reader, b []byte) error {
	if rand == nil {
		rand = cryptorand.Reader
	}
	_, err := io.ReadFull(rand, b)
	return err
}

// ExportSender sets up an HPKE base-mode sender to pub with the given info
// and returns the KEM output and context.export(exporterContext, length)
// (RFC 9180 Section 5.3), with the suite's AEAD in the HPKE suite ID as the
// exporter secret depends on it. RFC 9420 Section 8.3 uses it, with empty info, to
// send an external init secret.
func ExportSender(pub, info []byte, exporterContext string, length int) (kemOutput, secret []byte, err error) {
	pk, err := kem.NewPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	enc, s, err := hpke.NewSender(pk, hpke.HKDFSHA256(), hpke.AES128GCM(), info)
	if err != nil {
		return nil, nil, err
	}
	secret, err = s.Export(exporterContext, length)
	if err != nil {
		return nil, nil, err
	}
	return enc, secret, nil
}

// ExportRecipient is the receiving side of ExportSender. Every failure
// returns ErrDecrypt.
func ExportRecipient(priv, kemOutput, info []byte, exporterContext string, length int) ([]byte, error) {
	sk, err := kem.NewPrivateKey(priv)
	if err != nil {
		return nil, ErrDecrypt
	}
	r, err := hpke.NewRecipient(kemOutput, sk, hpke.HKDFSHA256(), hpke.AES128GCM(), info)
	if err != nil {
		return nil, ErrDecrypt
	}
	secret, err := r.Export(exporterContext, length)
	if err != nil {
		return nil, ErrDecrypt
	}
	return secret, nil
}
