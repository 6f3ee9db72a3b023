package vectors

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// message-protection: PublicMessage signatures and membership tags,
// PrivateMessage encryption with the secret tree and sender data (RFC 9420
// Sections 6.1 to 6.3). The sender is leaf 1 of a two-leaf secret tree.
func init() {
	register(&kind{name: "message-protection", requires: []string{"membership_key", "application"}, run: decoded(runMessageProtection)})
}

// mpEnv is what every sub-check of a message-protection case shares.
type mpEnv struct {
	v    *vectorfmt.MessageProtection
	ctx  *mls.GroupContext
	priv ed25519.PrivateKey
}

func runMessageProtection(v *vectorfmt.MessageProtection) error {
	if len(v.SignaturePriv) != ed25519.SeedSize {
		return fmt.Errorf("signature_priv is %d bytes", len(v.SignaturePriv))
	}
	env := &mpEnv{
		v: v,
		ctx: &mls.GroupContext{
			Version: mls.ProtocolMLS10, CipherSuite: mls.CipherSuite(v.CipherSuite), GroupID: v.GroupID,
			Epoch: v.Epoch, TreeHash: v.TreeHash, ConfirmedTranscriptHash: v.ConfirmedTranscriptHash,
		},
		priv: ed25519.NewKeyFromSeed(v.SignaturePriv),
	}
	var ck checker
	proposal, err := mls.ParseProposal(v.Proposal)
	if !ck.fail("proposal", err) {
		content := env.content(mls.ContentTypeProposal)
		content.Proposal = proposal
		ck.fail("proposal", env.check(content, v.Proposal, v.ProposalPub, v.ProposalPriv))
	}
	commit, err := mls.ParseCommit(v.Commit)
	if !ck.fail("commit", err) {
		content := env.content(mls.ContentTypeCommit)
		content.Commit = commit
		ck.fail("commit", env.check(content, v.Commit, v.CommitPub, v.CommitPriv))
	}
	content := env.content(mls.ContentTypeApplication)
	content.ApplicationData = v.Application
	ck.fail("application", env.check(content, v.Application, nil, v.ApplicationPriv))
	return ck.err()
}

func (e *mpEnv) content(ct mls.ContentType) *mls.FramedContent {
	return &mls.FramedContent{
		GroupID: e.v.GroupID, Epoch: e.v.Epoch,
		Sender:      mls.Sender{Type: mls.SenderTypeMember, Index: 1},
		ContentType: ct,
	}
}

// protector returns a fresh Protector: every sub-check starts from a new
// two-member secret tree, as the format prescribes.
func (e *mpEnv) protector() (*mls.Protector, error) {
	return mls.NewProtector(e.ctx, e.v.EncryptionSecret, e.v.SenderDataSecret, e.v.MembershipKey, 2)
}

func (e *mpEnv) signer(leaf uint32) ([]byte, error) {
	if leaf != 1 {
		return nil, fmt.Errorf("message from leaf %d, want 1", leaf)
	}
	return e.v.SignaturePub, nil
}

// body returns the encoding of the content's proposal, commit or
// application data, to compare with the vector's raw value.
func body(c *mls.FramedContent) []byte {
	switch c.ContentType {
	case mls.ContentTypeProposal:
		return mls.MarshalProposal(c.Proposal)
	case mls.ContentTypeCommit:
		return c.Commit.Marshal()
	}
	return c.ApplicationData
}

// tag is a placeholder confirmation tag for commits we protect ourselves:
// the format says it is carried, not checked.
var tag = bytes.Repeat([]byte{0xcc}, 32)

func (e *mpEnv) check(content *mls.FramedContent, raw, pubMsg, privMsg []byte) error {
	var ck checker
	if pubMsg != nil {
		ck.fail("vector PublicMessage", e.unprotect(pubMsg, raw))
	}
	p, err := e.protector()
	if err != nil {
		return err
	}
	pm, err := p.ProtectPublic(content, e.priv, tag)
	switch {
	case content.ContentType == mls.ContentTypeApplication:
		if err == nil {
			ck.errorf("protecting application data as a PublicMessage succeeded")
		}
	case !ck.fail("ProtectPublic", err):
		ck.fail("our PublicMessage", e.unprotect(encodeMessage(&mls.MLSMessage{
			Version: mls.ProtocolMLS10, WireFormat: mls.WireFormatPublicMessage, PublicMessage: pm,
		}), raw))
	}
	ck.fail("vector PrivateMessage", e.unprotect(privMsg, raw))
	p, err = e.protector()
	if err != nil {
		return err
	}
	p.PaddingBlock = 64
	priv, err := p.ProtectPrivate(content, e.priv, tag)
	if !ck.fail("ProtectPrivate", err) {
		ck.fail("our PrivateMessage", e.unprotect(encodeMessage(&mls.MLSMessage{
			Version: mls.ProtocolMLS10, WireFormat: mls.WireFormatPrivateMessage, PrivateMessage: priv,
		}), raw))
	}
	return ck.err()
}

func encodeMessage(m *mls.MLSMessage) []byte {
	b, err := m.Marshal()
	if err != nil {
		return nil
	}
	return b
}

// unprotect decodes an MLSMessage, unprotects it with a fresh protector
// and compares its body with raw. A PrivateMessage is also checked to fail
// on a second decryption (the key is deleted after use).
func (e *mpEnv) unprotect(msg, raw []byte) error {
	m, err := mls.ParseMLSMessage(msg)
	if err != nil {
		return err
	}
	if again, _ := m.Marshal(); !bytes.Equal(again, msg) {
		return errors.New("MLSMessage does not re-encode to the same bytes")
	}
	p, err := e.protector()
	if err != nil {
		return err
	}
	var ac *mls.AuthenticatedContent
	switch m.WireFormat {
	case mls.WireFormatPublicMessage:
		ac, err = p.UnprotectPublic(m.PublicMessage, e.v.SignaturePub)
	case mls.WireFormatPrivateMessage:
		ac, err = p.UnprotectPrivate(m.PrivateMessage, e.signer)
		if err == nil {
			if _, err2 := p.UnprotectPrivate(m.PrivateMessage, e.signer); !errors.Is(err2, mls.ErrGenerationUsed) {
				return fmt.Errorf("second decryption: %v, want ErrGenerationUsed", err2)
			}
		}
	default:
		return fmt.Errorf("wire format %d", m.WireFormat)
	}
	if err != nil {
		return err
	}
	if got := body(&ac.Content); !bytes.Equal(got, raw) {
		return fmt.Errorf("content = %x, want %x", got, raw)
	}
	return nil
}
