package mls

import (
	"bytes"
	"fmt"

	"github.com/torpor-dev/torpor/mls/internal/suite"
)

// SendOptions tunes how a handshake message is sent: as a PublicMessage or
// a PrivateMessage, with which authenticated_data (RFC 9420, Section 6).
type SendOptions struct {
	// Public sends a PublicMessage instead of a PrivateMessage.
	Public bool
	// AuthenticatedData is carried in the clear, authenticated.
	AuthenticatedData []byte
}

// Propose sends p as a proposal of this member (RFC 9420, Section 12.1) and
// caches it, so this member's next Commit covers it by reference like any
// received proposal. Updates must be made with ProposeUpdate, which keeps
// the new private key; ExternalInit is only for external Commits.
func (g *Group) Propose(p Proposal, opts *SendOptions) (_ *MLSMessage, err error) {
	defer g.recoverSticky(&err)
	if err := g.usable(); err != nil {
		return nil, err
	}
	switch p.(type) {
	case *UpdateProposal:
		return nil, fmt.Errorf("%w: use ProposeUpdate", ErrInvalidProposal)
	case *ExternalInitProposal, *UnknownProposal:
		return nil, fmt.Errorf("%w: %T cannot be proposed", ErrInvalidProposal, p)
	}
	// Check p as the only proposal of a Commit by someone else (no leaf
	// has index 2^32-1).
	self := Sender{Type: SenderTypeMember, Index: uint32(g.self)}
	nobody := Sender{Type: SenderTypeMember, Index: ^uint32(0)}
	if _, err := g.applyProposals([]committedProposal{{proposal: p, sender: self}}, nobody, false, true); err != nil {
		return nil, err
	}
	return g.sendProposal(p, opts)
}

// ProposeUpdate proposes to replace this member's LeafNode with one with a
// fresh encryption key (RFC 9420, Section 12.1.2). Another member's Commit
// must cover it; this member's own Commits refresh its leaf through their
// path instead.
func (g *Group) ProposeUpdate(opts *SendOptions) (_ *MLSMessage, err error) {
	return g.proposeUpdate(nil, opts)
}

// ProposeRotation proposes an Update that also replaces this member's
// credential and signature key with r's (RFC 9420, Sections 5.3.1 and
// 12.1.2). The proposal is signed with the current key; once another
// member's Commit covers it, the group signs with the new one.
func (g *Group) ProposeRotation(r Rotation, opts *SendOptions) (_ *MLSMessage, err error) {
	return g.proposeUpdate(&r, opts)
}

func (g *Group) proposeUpdate(r *Rotation, opts *SendOptions) (_ *MLSMessage, err error) {
	defer g.recoverSticky(&err)
	if err := g.usable(); err != nil {
		return nil, err
	}
	priv, pub, err := suite.GenerateKeyPair(g.config.rand())
	if err != nil {
		return nil, err
	}
	leaf, sigPriv := g.tree.leaf(g.self).clone(), g.sigPriv
	if r != nil {
		leaf, sigPriv = r.leaf(leaf), r.SignatureKey
		// The new signing key waits with the encryption key for the
		// Commit that covers the Update (see Group.pendingUpdate).
		priv = append(priv, r.SignatureKey.Seed()...)
	}
	leaf.EncryptionKey = pub
	leaf.Source = LeafNodeSourceUpdate
	leaf.Lifetime, leaf.ParentHash = Lifetime{}, nil
	if err := leaf.sign(sigPriv, g.ctx.GroupID, uint32(g.self)); err != nil {
		return nil, err
	}
	m, err := g.sendProposal(&UpdateProposal{LeafNode: *leaf}, opts)
	if err != nil {
		return nil, err
	}
	if g.pendingUpdate == nil {
		g.pendingUpdate = map[string][]byte{}
	}
	g.pendingUpdate[string(pub)] = priv
	return m, nil
}

// sendProposal frames, protects and caches a proposal of this member.
func (g *Group) sendProposal(p Proposal, opts *SendOptions) (*MLSMessage, error) {
	if opts == nil {
		opts = &SendOptions{}
	}
	content := &FramedContent{
		GroupID: bytes.Clone(g.ctx.GroupID), Epoch: g.ctx.Epoch,
		Sender:            Sender{Type: SenderTypeMember, Index: uint32(g.self)},
		AuthenticatedData: bytes.Clone(opts.AuthenticatedData),
		ContentType:       ContentTypeProposal, Proposal: p,
	}
	m := &MLSMessage{Version: ProtocolMLS10}
	var ac *AuthenticatedContent
	if opts.Public {
		pm, err := g.protector.ProtectPublic(content, g.sigPriv, nil)
		if err != nil {
			return nil, err
		}
		m.WireFormat, m.PublicMessage = WireFormatPublicMessage, pm
		ac = &AuthenticatedContent{WireFormat: WireFormatPublicMessage, Content: pm.Content, Auth: pm.Auth}
	} else {
		sig, err := g.protector.sign(WireFormatPrivateMessage, content, g.sigPriv)
		if err != nil {
			return nil, err
		}
		pm, err := g.protector.ProtectPrivate(content, g.sigPriv, nil)
		if err != nil {
			return nil, err
		}
		m.WireFormat, m.PrivateMessage = WireFormatPrivateMessage, pm
		ac = &AuthenticatedContent{WireFormat: WireFormatPrivateMessage, Content: *content, Auth: FramedContentAuthData{Signature: sig}}
	}
	g.proposals = append(g.proposals, cachedProposal{ref: proposalRef(ac), proposal: p, sender: content.Sender})
	return m, nil
}
