package vectors

import (
	"bytes"
	"crypto/ed25519"
	"fmt"

	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// passive-client: join by Welcome (tree in the Welcome or out of band,
// path secret, external PSKs), then follow the group's commits as a
// non-committing member, comparing the epoch authenticator after each
// (RFC 9420 Sections 12.4.3.1 and 12.4.2).
func init() {
	register(&kind{name: "passive-client", requires: []string{"epochs", "initial_epoch_authenticator"}, run: decoded(runPassiveClient)})
}

func runPassiveClient(v *vectorfmt.PassiveClient) error {
	g, err := joinPassive(v)
	if err != nil {
		return fmt.Errorf("joining: %w", err)
	}
	if !bytes.Equal(g.EpochAuthenticator(), v.InitialEpochAuthenticator) {
		return fmt.Errorf("initial epoch_authenticator = %x, want %x", g.EpochAuthenticator(), v.InitialEpochAuthenticator)
	}
	for i, ep := range v.Epochs {
		for k, p := range ep.Proposals {
			if err := process(g, p, mls.ContentTypeProposal); err != nil {
				return fmt.Errorf("epoch %d proposal %d: %w", i, k, err)
			}
		}
		if err := process(g, ep.Commit, mls.ContentTypeCommit); err != nil {
			return fmt.Errorf("epoch %d commit: %w", i, err)
		}
		if !bytes.Equal(g.EpochAuthenticator(), ep.EpochAuthenticator) {
			return fmt.Errorf("epoch %d: epoch_authenticator = %x, want %x", i, g.EpochAuthenticator(), ep.EpochAuthenticator)
		}
	}
	return nil
}

// joinPassive joins the group of the case's Welcome with its keys and PSKs.
func joinPassive(v *vectorfmt.PassiveClient) (*mls.Group, error) {
	psks := map[string][]byte{}
	for _, p := range v.ExternalPSKs {
		psks[string(p.PSKID)] = p.PSK
	}
	kp, err := parseKeyPackageMessage(v.KeyPackage)
	if err != nil {
		return nil, err
	}
	w, err := parseWelcomeMessage(v.Welcome)
	if err != nil {
		return nil, err
	}
	var tree *mls.RatchetTree
	if v.RatchetTree != nil {
		if tree, err = mls.ParseRatchetTree(v.RatchetTree); err != nil {
			return nil, err
		}
	}
	if len(v.SignaturePriv) != ed25519.SeedSize {
		return nil, fmt.Errorf("signature_priv is %d bytes", len(v.SignaturePriv))
	}
	priv := &mls.KeyPackagePrivate{
		InitPriv:       v.InitPriv,
		EncryptionPriv: v.EncryptionPriv,
		SignaturePriv:  ed25519.NewKeyFromSeed(v.SignaturePriv),
	}
	return mls.Join(&mls.Config{PSKs: mls.ExternalPSKs(psks)}, w, kp, priv, tree)
}

// process hands one handshake MLSMessage to the group and checks it was of
// the expected content type.
func process(g *mls.Group, msg []byte, want mls.ContentType) error {
	m, err := mls.ParseMLSMessage(msg)
	if err != nil {
		return err
	}
	pm, err := g.ProcessMessage(m)
	if err != nil {
		return err
	}
	if pm.ContentType != want {
		return fmt.Errorf("content type %d, want %d", pm.ContentType, want)
	}
	return nil
}
