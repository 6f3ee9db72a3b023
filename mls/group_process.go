package mls

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"maps"

	"github.com/torpor-dev/torpor/mls/internal/schedule"
	"github.com/torpor-dev/torpor/mls/internal/suite"
	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
)

// A ProcessedMessage is the result of ProcessMessage: a PublicMessage or
// PrivateMessage unprotected (RFC 9420, Sections 6.2 and 6.3) and handled.
type ProcessedMessage struct {
	Sender            Sender
	ContentType       ContentType
	AuthenticatedData []byte
	// ApplicationData is the decrypted data of an application message.
	ApplicationData []byte
	// Proposal is a proposal now cached for a later Commit.
	Proposal Proposal
	// Commit describes the Commit that moved the group to a new epoch.
	Commit *CommitSummary
}

// CommitSummary says what a processed Commit changed (RFC 9420, Section
// 12.4.2).
type CommitSummary struct {
	Epoch   uint64   // the new epoch
	Added   []uint32 // leaves of new members
	Removed bool     // this client was removed: the group is no longer usable
	ReInit  *ReInitProposal
}

// ProcessMessage handles a PublicMessage or PrivateMessage of the group's
// current epoch (RFC 9420, Sections 6 and 12): it verifies and decrypts it,
// returns application data, caches proposals for later Commits, and
// applies Commits, moving the group to the next epoch (Section 12.4.2).
//
// Errors: ErrWrongGroup and ErrEpochMismatch for messages of another group
// or epoch; ErrDecryption for failed decryption or MACs; ErrInvalidSignature;
// ErrInvalidProposal, ErrUnknownProposal, ErrInvalidUpdatePath and
// ErrInvalidCommit for invalid handshake messages; a *ParseError for
// malformed content. A rejected message leaves the group unchanged. A panic
// while processing becomes the group's sticky error.
//
// A Commit this client made is refused (ErrInvalidCommit): apply it with
// MergeCommit. A proposal already cached (our own, echoed back by the
// delivery service) is accepted once.
func (g *Group) ProcessMessage(m *MLSMessage) (_ *ProcessedMessage, err error) {
	defer g.recoverSticky(&err)
	if g.err != nil {
		return nil, g.err
	}
	if g.removed {
		return nil, ErrNotMember
	}
	if g.reinit != nil {
		return nil, ErrReInitPending
	}
	ac, err := g.unprotect(m)
	if err != nil {
		return nil, err
	}
	out := &ProcessedMessage{
		Sender: ac.Content.Sender, ContentType: ac.Content.ContentType,
		AuthenticatedData: ac.Content.AuthenticatedData,
	}
	switch ac.Content.ContentType {
	case ContentTypeApplication:
		out.ApplicationData = ac.Content.ApplicationData
	case ContentTypeProposal:
		if err := g.receiveProposal(ac); err != nil {
			return nil, err
		}
		out.Proposal = ac.Content.Proposal
	case ContentTypeCommit:
		if out.Commit, err = g.processCommit(ac); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// unprotect verifies a PublicMessage or decrypts a PrivateMessage of the
// current epoch (RFC 9420, Sections 6.2 and 6.3).
func (g *Group) unprotect(m *MLSMessage) (*AuthenticatedContent, error) {
	switch {
	case m.WireFormat == WireFormatPrivateMessage && m.PrivateMessage != nil:
		return g.openPrivate(m.PrivateMessage)
	case m.WireFormat == WireFormatPublicMessage && m.PublicMessage != nil:
		pm := m.PublicMessage
		if !bytes.Equal(pm.Content.GroupID, g.ctx.GroupID) {
			return nil, ErrWrongGroup
		}
		if pm.Content.Epoch != g.ctx.Epoch {
			return nil, ErrEpochMismatch
		}
		signer, err := g.publicSigner(&pm.Content)
		if err != nil {
			return nil, err
		}
		return g.protector.UnprotectPublic(pm, signer)
	}
	return nil, fmt.Errorf("%w: wire format %d is not a group message", ErrInvalidCommit, m.WireFormat)
}

// publicSigner returns the signature key of a PublicMessage's sender (RFC
// 9420, Section 6.1): the member's leaf, the external_senders entry, the
// KeyPackage of a new member's Add, or the leaf in an external Commit's
// path.
func (g *Group) publicSigner(c *FramedContent) ([]byte, error) {
	s := c.Sender
	switch s.Type {
	case SenderTypeMember:
		return g.memberSignatureKey(s.Index)
	case SenderTypeExternal:
		ext := findExtension(g.ctx.Extensions, ExtensionTypeExternalSenders)
		if ext == nil || c.ContentType != ContentTypeProposal {
			return nil, fmt.Errorf("%w: external sender without external_senders, or not a proposal", ErrUnknownSender)
		}
		senders, err := ParseExternalSenders(ext.Data)
		if err != nil {
			return nil, err
		}
		if uint64(s.Index) >= uint64(len(senders)) {
			return nil, fmt.Errorf("%w: external sender %d", ErrUnknownSender, s.Index)
		}
		return senders[s.Index].SignatureKey, nil
	case SenderTypeNewMemberProposal:
		if add, ok := c.Proposal.(*AddProposal); ok && c.ContentType == ContentTypeProposal {
			return add.KeyPackage.LeafNode.SignatureKey, nil
		}
	case SenderTypeNewMemberCommit:
		if c.ContentType == ContentTypeCommit && c.Commit.Path != nil {
			return c.Commit.Path.LeafNode.SignatureKey, nil
		}
	}
	return nil, fmt.Errorf("%w: sender type %d with content type %d", ErrUnknownSender, s.Type, c.ContentType)
}

// receiveProposal checks a proposal's sender rules and caches it with its
// reference (RFC 9420, Sections 12.1 and 5.2). Its validity against the
// group is checked when a Commit covers it.
func (g *Group) receiveProposal(ac *AuthenticatedContent) error {
	p := ac.Content.Proposal
	if err := checkProposalSender(p, ac.Content.Sender); err != nil {
		return err
	}
	if _, ok := p.(*UnknownProposal); ok {
		return fmt.Errorf("%w: unsupported proposal type %d", ErrInvalidProposal, p.ProposalType())
	}
	ref := proposalRef(ac)
	for _, cp := range g.proposals {
		if bytes.Equal(cp.ref, ref) {
			return nil // a copy, e.g. our own proposal echoed back
		}
	}
	g.proposals = append(g.proposals, cachedProposal{ref: ref, proposal: p, sender: ac.Content.Sender})
	return nil
}

// resolveProposals turns a Commit's ProposalOrRefs into proposals with
// their senders (RFC 9420, Section 12.4): by value from the committer, by
// reference from the cache. External Commits may not use references.
func (g *Group) resolveProposals(c *Commit, committer Sender) ([]committedProposal, error) {
	var list []committedProposal
	for _, por := range c.Proposals {
		if por.Proposal != nil {
			list = append(list, committedProposal{proposal: por.Proposal, sender: committer})
			continue
		}
		if committer.Type == SenderTypeNewMemberCommit {
			return nil, fmt.Errorf("%w: an external Commit refers to a proposal", ErrInvalidProposal)
		}
		found := false
		for _, cp := range g.proposals {
			if bytes.Equal(cp.ref, por.Reference) {
				list = append(list, committedProposal{proposal: cp.proposal, sender: cp.sender})
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: %x", ErrUnknownProposal, por.Reference)
		}
	}
	return list, nil
}

// processCommit applies a Commit of another member or an external joiner
// (RFC 9420, Section 12.4.2).
func (g *Group) processCommit(ac *AuthenticatedContent) (*CommitSummary, error) {
	c, sender := ac.Content.Commit, ac.Content.Sender
	external := sender.Type == SenderTypeNewMemberCommit
	switch {
	case sender.Type == SenderTypeMember && tm.LeafIndex(sender.Index) == g.self:
		return nil, fmt.Errorf("%w: our own Commit; use MergeCommit", ErrInvalidCommit)
	case sender.Type != SenderTypeMember && !external:
		return nil, fmt.Errorf("%w: sender type %d cannot commit", ErrInvalidCommit, sender.Type)
	case external && ac.WireFormat != WireFormatPublicMessage:
		return nil, fmt.Errorf("%w: external Commit not in a PublicMessage", ErrInvalidCommit)
	}
	list, err := g.resolveProposals(c, sender)
	if err != nil {
		return nil, err
	}
	ch, err := g.applyProposals(list, sender, external, false)
	if err != nil {
		return nil, err
	}
	if (ch.pathRequired || external) && c.Path == nil {
		return nil, fmt.Errorf("%w: path required", ErrInvalidCommit)
	}
	if ch.removedSelf {
		// We cannot follow the group past a Commit that removes us: we get
		// no secrets for the new epoch (RFC 9420, Section 12.4.2).
		g.removed = true
		return &CommitSummary{Epoch: g.ctx.Epoch + 1, Removed: true}, nil
	}
	pc := &commitProcess{g: g, ac: ac, ch: ch, committer: tm.LeafIndex(sender.Index)}
	steps := []func() error{pc.path, pc.initSecret, pc.schedule, pc.confirm}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	next, err := g.successor(pc.ctx, ch, pc.nodeKeys, pc.confirmed, ac.Auth.ConfirmationTag, pc.epoch)
	if err != nil {
		return nil, err
	}
	if pc.sigPriv != nil {
		next.sigPriv = pc.sigPriv
	}
	*g = *next
	sum := &CommitSummary{Epoch: g.ctx.Epoch, ReInit: ch.reinit}
	for _, l := range ch.added {
		sum.Added = append(sum.Added, uint32(l))
	}
	return sum, nil
}

// commitProcess carries a received Commit through its steps.
type commitProcess struct {
	g         *Group
	ac        *AuthenticatedContent
	ch        *epochChange
	committer tm.LeafIndex

	ctx          *GroupContext
	nodeKeys     map[tm.NodeIndex][]byte
	commitSecret []byte
	sigPriv      ed25519.PrivateKey // our new signing key, if our Update was a Rotation
	confirmed    []byte
	init         []byte
	epoch        *schedule.Epoch
}

// path validates and merges the UpdatePath, if any, and decrypts its path
// secret (RFC 9420, Sections 7.5, 7.6 and 12.4.2).
func (pc *commitProcess) path() error {
	g, t := pc.g, pc.ch.tree
	pc.nodeKeys = maps.Clone(g.nodeKeys)
	if pc.ch.selfUpdate != nil {
		priv, ok := g.pendingUpdate[string(pc.ch.selfUpdate.EncryptionKey)]
		if !ok {
			return fmt.Errorf("%w: commits an Update of our leaf we did not make", ErrInvalidCommit)
		}
		if len(priv) == suite.HPKEKeySize+ed25519.SeedSize { // a Rotation
			pc.sigPriv = ed25519.NewKeyFromSeed(priv[suite.HPKEKeySize:])
			priv = priv[:suite.HPKEKeySize]
		}
		pc.nodeKeys[g.self.Node()] = bytes.Clone(priv)
	}
	pc.ctx = &GroupContext{
		Version: g.ctx.Version, CipherSuite: g.ctx.CipherSuite, GroupID: bytes.Clone(g.ctx.GroupID),
		Epoch: g.ctx.Epoch + 1, ConfirmedTranscriptHash: g.ctx.ConfirmedTranscriptHash,
		Extensions: pc.ch.extensions,
	}
	up := pc.ac.Content.Commit.Path
	if up == nil {
		t.pruneKeys(g.self, pc.nodeKeys)
		pc.ctx.TreeHash = t.TreeHash()
		return nil
	}
	if pc.ac.Content.Sender.Type == SenderTypeNewMemberCommit {
		pc.committer = t.leftmostBlank()
	}
	err := t.checkUpdatePath(pc.committer, up, leafCheck{
		groupID: g.ctx.GroupID, extensions: pc.ch.extensions, credential: g.config.credential(),
		successor: g.config.successor(),
	})
	if err != nil {
		return err
	}
	if err := t.mergePath(pc.committer, up); err != nil {
		return err
	}
	t.pruneKeys(g.self, pc.nodeKeys)
	pc.ctx.TreeHash = t.TreeHash()
	keys, _, commitSecret, err := t.decryptPath(pc.committer, g.self, up, pc.nodeKeys, pc.ch.added, pc.ctx.Marshal())
	if err != nil {
		return err
	}
	maps.Copy(pc.nodeKeys, keys)
	pc.commitSecret = commitSecret
	return nil
}

// initSecret picks the init_secret: the current epoch's, or for an
// external Commit the one encapsulated in its ExternalInit (RFC 9420,
// Section 8.3).
func (pc *commitProcess) initSecret() error {
	e := pc.g.epoch
	if pc.ch.externalInit == nil {
		pc.init = e.InitSecret
		return nil
	}
	priv, _, err := e.ExternalKeyPair()
	if err != nil {
		return err
	}
	if pc.init, err = schedule.ExternalInitSecret(priv, pc.ch.externalInit); err != nil {
		return ErrDecryption
	}
	return nil
}

// schedule updates the transcript hash and derives the new epoch (RFC 9420,
// Sections 8 and 8.2).
func (pc *commitProcess) schedule() error {
	pc.confirmed = schedule.ConfirmedTranscriptHash(pc.g.interim, pc.ac.ConfirmedTranscriptHashInput())
	pc.ctx.ConfirmedTranscriptHash = pc.confirmed
	psk, err := pc.g.pskSecret(pc.ch.psks)
	if err != nil {
		return err
	}
	_, pc.epoch = schedule.Next(pc.init, pc.commitSecret, psk, pc.ctx.Marshal())
	return nil
}

// confirm checks the Commit's confirmation tag (RFC 9420, Section 6.1).
func (pc *commitProcess) confirm() error {
	if !schedule.VerifyConfirmationTag(pc.epoch.ConfirmationKey, pc.confirmed, pc.ac.Auth.ConfirmationTag) {
		return fmt.Errorf("%w: confirmation tag does not match", ErrInvalidCommit)
	}
	return nil
}
