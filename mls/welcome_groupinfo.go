package mls

import (
	"crypto/ed25519"

	"github.com/torpor-dev/torpor/mls/internal/suite"
)

// Sign sets g.Signer to signer and g.Signature to SignWithLabel(priv,
// "GroupInfoTBS", GroupInfoTBS) (RFC 9420, Section 12.4.3).
func (g *GroupInfo) Sign(signer uint32, priv ed25519.PrivateKey) error {
	g.Signer = signer
	sig, err := suite.SignWithLabel(priv, "GroupInfoTBS", g.TBS())
	if err != nil {
		return err
	}
	g.Signature = sig
	return nil
}

// Verify checks the GroupInfo signature against signerPub, the signature
// key of the leaf g.Signer (RFC 9420, Section 12.4.3). It returns
// ErrInvalidSignature on failure.
func (g *GroupInfo) Verify(signerPub []byte) error {
	if !suite.VerifyWithLabel(signerPub, "GroupInfoTBS", g.TBS(), g.Signature) {
		return ErrInvalidSignature
	}
	return nil
}
