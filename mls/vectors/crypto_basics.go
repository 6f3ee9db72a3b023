package vectors

import (
	"crypto/ed25519"

	"github.com/torpor-dev/torpor/mls/internal/suite"
	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// crypto-basics: the labelled primitives of RFC 9420 Sections 5.1 and 5.2,
// DeriveTreeSecret (Section 9) and HPKE EncryptWithLabel (Section 5.1.3).
func init() {
	register(&kind{name: "crypto-basics", requires: []string{"ref_hash"}, run: decoded(runCryptoBasics)})
}

func runCryptoBasics(v *vectorfmt.CryptoBasics) error {
	var ck checker
	ck.bytes("RefHash", suite.RefHash(v.RefHash.Label, v.RefHash.Value), v.RefHash.Out)

	e := v.ExpandWithLabel
	if e.Length > suite.MaxExpand {
		ck.errorf("expand_with_label length %d too large", e.Length)
	} else {
		ck.bytes("ExpandWithLabel", suite.ExpandWithLabel(e.Secret, e.Label, e.Context, e.Length), e.Out)
	}
	ck.bytes("DeriveSecret", suite.DeriveSecret(v.DeriveSecret.Secret, v.DeriveSecret.Label), v.DeriveSecret.Out)
	d := v.DeriveTreeSecret
	if d.Length > suite.MaxExpand {
		ck.errorf("derive_tree_secret length %d too large", d.Length)
	} else {
		ck.bytes("DeriveTreeSecret", suite.DeriveTreeSecret(d.Secret, d.Label, d.Generation, d.Length), d.Out)
	}

	s := v.SignWithLabel
	if !suite.VerifyWithLabel(s.Pub, s.Label, s.Content, s.Signature) {
		ck.errorf("VerifyWithLabel rejects the vector's signature")
	}
	if len(s.Priv) != ed25519.SeedSize {
		ck.errorf("sign_with_label priv is %d bytes, want %d", len(s.Priv), ed25519.SeedSize)
	} else {
		sig, err := suite.SignWithLabel(ed25519.NewKeyFromSeed(s.Priv), s.Label, s.Content)
		if !ck.fail("SignWithLabel", err) && !suite.VerifyWithLabel(s.Pub, s.Label, s.Content, sig) {
			ck.errorf("VerifyWithLabel rejects a fresh SignWithLabel signature")
		}
	}

	x := v.EncryptWithLabel
	pt, err := suite.DecryptWithLabel(x.Priv, x.Label, x.Context, x.KEMOutput, x.Ciphertext)
	if !ck.fail("DecryptWithLabel", err) {
		ck.bytes("DecryptWithLabel", pt, x.Plaintext)
	}
	kemOut, ct, err := suite.EncryptWithLabel(x.Pub, x.Label, x.Context, x.Plaintext)
	if !ck.fail("EncryptWithLabel", err) {
		pt, err := suite.DecryptWithLabel(x.Priv, x.Label, x.Context, kemOut, ct)
		if !ck.fail("DecryptWithLabel(EncryptWithLabel)", err) {
			ck.bytes("DecryptWithLabel(EncryptWithLabel)", pt, x.Plaintext)
		}
	}
	return ck.err()
}
