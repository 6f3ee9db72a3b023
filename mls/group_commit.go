package mls

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"maps"

	"github.com/torpor-dev/torpor/mls/internal/schedule"
	"github.com/torpor-dev/torpor/mls/internal/suite"
	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
)

// Commits: creating them (RFC 9420, Section 12.4.1), processing them
// (Section 12.4.2), and the handshake side of ProcessMessage.
//
// Both directions build the next epoch's state as a new Group value and
// replace the old one only once every check passed, so a rejected Commit
// leaves the group as it was.

// CommitOptions tunes Commit (RFC 9420, Section 12.4.1). The zero value
// commits every valid proposal received in the epoch, by reference, with a
// path only when one is required, as a PrivateMessage.
type CommitOptions struct {
	// Proposals are included by value, before the received ones.
	Proposals []Proposal
	// IgnoreReceived leaves out the proposals received in the epoch.
	IgnoreReceived bool
	// ForcePath includes an UpdatePath even when no proposal requires one.
	ForcePath bool
	// Public sends the Commit as a PublicMessage instead of a
	// PrivateMessage.
	Public bool
	// AuthenticatedData is carried in the clear, authenticated.
	AuthenticatedData []byte
	// RatchetTreeInWelcome puts the ratchet tree in the Welcome's
	// GroupInfo (ratchet_tree extension); otherwise joiners need it out of
	// band (Group.RatchetTree after the merge).
	RatchetTreeInWelcome bool
	// Rotate, if set, replaces this member's credential and signature key
	// in the LeafNode of the Commit's UpdatePath, which the Commit then
	// always carries (RFC 9420, Sections 5.3.1 and 12.4.1). The Commit is
	// signed with the current key; after MergeCommit the group signs with
	// the new one.
	Rotate *Rotation
}

// A Rotation is a new credential and signature key for this member, in an
// Update (Group.ProposeRotation) or a Commit's UpdatePath
// (CommitOptions.Rotate). The other members' Authentication Service
// decides whether the new credential may succeed the old one (RFC 9420,
// Section 5.3.1; see Config.ValidateSuccessor).
type Rotation struct {
	Credential   Credential
	SignatureKey ed25519.PrivateKey
}

// leaf returns a copy of old with r's credential and signature key.
func (r *Rotation) leaf(old *LeafNode) *LeafNode {
	l := old.clone()
	l.Credential = r.Credential
	l.SignatureKey = suite.SignaturePublicKey(r.SignatureKey)
	return l
}

// A PendingCommit is a Commit this client created (RFC 9420, Section
// 12.4.1): the message to send,
// the Welcome for new members (nil if the Commit adds none) and the signed
// GroupInfo of the new epoch (with an external_pub extension, for external
// joins). The group moves to the new epoch only with MergeCommit, once the
// delivery service accepted the Commit.
type PendingCommit struct {
	Message   *MLSMessage
	Welcome   *MLSMessage
	GroupInfo *GroupInfo

	base uint64 // epoch the Commit was made in
	next *Group
}

// Commit creates a Commit covering opts.Proposals and, unless
// opts.IgnoreReceived, every proposal received in the epoch that keeps the
// list valid (RFC 9420, Sections 12.2 and 12.4.1). It returns
// ErrInvalidProposal if the proposals given by value do not form a valid
// list, and the sticky error, ErrNotMember or ErrReInitPending if the group
// may not send. The group itself does not change until MergeCommit.
func (g *Group) Commit(opts *CommitOptions) (_ *PendingCommit, err error) {
	defer g.recoverSticky(&err)
	if err := g.usable(); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &CommitOptions{}
	}
	self := Sender{Type: SenderTypeMember, Index: uint32(g.self)}
	list, refs, err := g.chooseProposals(opts, self)
	if err != nil {
		return nil, err
	}
	ch, err := g.applyProposals(list, self, false, true)
	if err != nil {
		return nil, err
	}
	c := &commitBuild{g: g, ch: ch, opts: opts, commit: &Commit{}}
	for i, cp := range list {
		if refs[i] != nil {
			c.commit.Proposals = append(c.commit.Proposals, ProposalOrRef{Reference: refs[i]})
		} else {
			c.commit.Proposals = append(c.commit.Proposals, ProposalOrRef{Proposal: cp.proposal})
		}
	}
	steps := []func() error{c.path, c.frame, c.schedule, c.protect, c.successor, c.welcome}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return &PendingCommit{Message: c.msg, Welcome: c.welcomeMsg, GroupInfo: c.groupInfo, base: g.ctx.Epoch, next: c.next}, nil
}

// chooseProposals returns the list to commit: opts.Proposals by value, then
// each received proposal (by reference) that keeps the list valid; invalid
// or conflicting ones are left out. refs[i] is the reference of list[i], or
// nil for a proposal by value.
func (g *Group) chooseProposals(opts *CommitOptions, self Sender) (list []committedProposal, refs [][]byte, err error) {
	for _, p := range opts.Proposals {
		switch p.(type) {
		case *UpdateProposal, *ExternalInitProposal:
			return nil, nil, fmt.Errorf("%w: %T cannot be committed by value by a member", ErrInvalidProposal, p)
		}
		list = append(list, committedProposal{proposal: p, sender: self})
		refs = append(refs, nil)
	}
	if _, err := g.applyProposals(list, self, false, true); err != nil {
		return nil, nil, err
	}
	if opts.IgnoreReceived {
		return list, refs, nil
	}
	// Updates go last and newest first, so that a Remove wins over an
	// Update of the same leaf and a later Update over an earlier one (RFC
	// 9420, Section 12.2).
	var order []cachedProposal
	for _, cp := range g.proposals {
		if _, ok := cp.proposal.(*UpdateProposal); !ok {
			order = append(order, cp)
		}
	}
	for i := len(g.proposals) - 1; i >= 0; i-- {
		if _, ok := g.proposals[i].proposal.(*UpdateProposal); ok {
			order = append(order, g.proposals[i])
		}
	}
	for _, cp := range order {
		try := append(list[:len(list):len(list)], committedProposal{proposal: cp.proposal, sender: cp.sender})
		if _, err := g.applyProposals(try, self, false, true); err == nil {
			list, refs = try, append(refs, cp.ref)
		}
	}
	return list, refs, nil
}

// commitBuild carries a Commit being created through its steps.
type commitBuild struct {
	g    *Group
	ch   *epochChange
	opts *CommitOptions

	commit       *Commit
	pu           *pathUpdate
	commitSecret []byte
	nodeKeys     map[tm.NodeIndex][]byte
	content      *FramedContent
	wf           WireFormat
	ctx          *GroupContext // of the new epoch
	confirmed    []byte
	pskSecret    []byte
	joinerSecret []byte
	epoch        *schedule.Epoch
	tag          []byte
	msg          *MLSMessage
	next         *Group
	welcomeMsg   *MLSMessage
	groupInfo    *GroupInfo
}

// path adds an UpdatePath when one is required or asked for (RFC 9420,
// Sections 7.5, 7.6 and 12.4.1).
func (c *commitBuild) path() error {
	g, t := c.g, c.ch.tree
	c.nodeKeys = maps.Clone(g.nodeKeys)
	c.ctx = &GroupContext{
		Version: g.ctx.Version, CipherSuite: g.ctx.CipherSuite, GroupID: bytes.Clone(g.ctx.GroupID),
		Epoch: g.ctx.Epoch + 1, ConfirmedTranscriptHash: g.ctx.ConfirmedTranscriptHash,
		Extensions: c.ch.extensions,
	}
	if !c.ch.pathRequired && !c.opts.ForcePath && c.opts.Rotate == nil {
		t.pruneKeys(g.self, c.nodeKeys)
		return nil
	}
	leaf, sigPriv := t.leaf(g.self), g.sigPriv
	if r := c.opts.Rotate; r != nil {
		leaf, sigPriv = r.leaf(leaf), r.SignatureKey
	}
	pu, err := t.createPath(g.self, leaf, sigPriv, g.ctx.GroupID, g.config.rand())
	if err != nil {
		return err
	}
	c.ctx.TreeHash = t.TreeHash()
	up, err := pu.encrypt(t, c.ctx.Marshal(), c.ch.added)
	if err != nil {
		return err
	}
	c.commit.Path, c.pu, c.commitSecret = up, pu, pu.commitSecret
	t.pruneKeys(g.self, c.nodeKeys)
	maps.Copy(c.nodeKeys, pu.keys)
	return nil
}

// frame builds the FramedContent and its signature, and the confirmed
// transcript hash of the new epoch (RFC 9420, Sections 6.1 and 8.2).
func (c *commitBuild) frame() error {
	g := c.g
	c.content = &FramedContent{
		GroupID: bytes.Clone(g.ctx.GroupID), Epoch: g.ctx.Epoch,
		Sender:            Sender{Type: SenderTypeMember, Index: uint32(g.self)},
		AuthenticatedData: bytes.Clone(c.opts.AuthenticatedData),
		ContentType:       ContentTypeCommit, Commit: c.commit,
	}
	c.wf = WireFormatPrivateMessage
	if c.opts.Public {
		c.wf = WireFormatPublicMessage
	}
	sig, err := g.protector.sign(c.wf, c.content, g.sigPriv)
	if err != nil {
		return err
	}
	ac := &AuthenticatedContent{WireFormat: c.wf, Content: *c.content, Auth: FramedContentAuthData{Signature: sig}}
	c.confirmed = schedule.ConfirmedTranscriptHash(g.interim, ac.ConfirmedTranscriptHashInput())
	c.ctx.TreeHash = c.ch.tree.TreeHash()
	c.ctx.ConfirmedTranscriptHash = c.confirmed
	return nil
}

// schedule runs the key schedule of the new epoch and computes the
// confirmation tag (RFC 9420, Sections 8 and 6.1).
func (c *commitBuild) schedule() error {
	psk, err := c.g.pskSecret(c.ch.psks)
	if err != nil {
		return err
	}
	c.pskSecret = psk
	c.joinerSecret, c.epoch = schedule.Next(c.g.epoch.InitSecret, c.commitSecret, psk, c.ctx.Marshal())
	c.tag = schedule.ConfirmationTag(c.epoch.ConfirmationKey, c.confirmed)
	return nil
}

// protect signs and protects the Commit with the keys of the current
// epoch (RFC 9420, Section 12.4.1).
func (c *commitBuild) protect() error {
	g := c.g
	c.msg = &MLSMessage{Version: ProtocolMLS10, WireFormat: c.wf}
	var err error
	if c.opts.Public {
		c.msg.PublicMessage, err = g.protector.ProtectPublic(c.content, g.sigPriv, c.tag)
	} else {
		c.msg.PrivateMessage, err = g.protector.ProtectPrivate(c.content, g.sigPriv, c.tag)
	}
	return err
}

// successor builds the group state of the new epoch.
func (c *commitBuild) successor() error {
	next, err := c.g.successor(c.ctx, c.ch, c.nodeKeys, c.confirmed, c.tag, c.epoch)
	if err != nil {
		return err
	}
	if r := c.opts.Rotate; r != nil {
		next.sigPriv = r.SignatureKey
	}
	c.next = next
	return nil
}

// welcome creates the signed GroupInfo of the new epoch and, if the Commit
// adds members, their Welcome (RFC 9420, Section 12.4.3.1).
func (c *commitBuild) welcome() error {
	next := c.next
	_, extPub, err := next.epoch.ExternalKeyPair()
	if err != nil {
		return err
	}
	exts := []Extension{ExternalPubExtension(extPub)}
	if c.opts.RatchetTreeInWelcome {
		exts = append(exts, Extension{Type: ExtensionTypeRatchetTree, Data: next.tree.Marshal()})
	}
	if c.groupInfo, err = next.signedGroupInfo(exts); err != nil {
		return err
	}
	if len(c.ch.added) == 0 {
		return nil
	}
	var joiners []welcomeJoiner
	for i, l := range c.ch.added {
		j := welcomeJoiner{kp: c.ch.addedKPs[i]}
		if c.pu != nil {
			j.pathSecret = c.pu.pathSecretFor(l)
		}
		joiners = append(joiners, j)
	}
	w, err := newWelcome(c.groupInfo, c.joinerSecret, c.pskSecret, c.ch.psks, joiners)
	if err != nil {
		return err
	}
	c.welcomeMsg = &MLSMessage{Version: ProtocolMLS10, WireFormat: WireFormatWelcome, Welcome: w}
	return nil
}

// errNoPendingCommit is returned by MergeCommit for nil, a PendingCommit
// not made by Commit, or one already merged.
var errNoPendingCommit = errors.New("mls: no pending commit to merge (nil, not made by Commit, or already merged)")

// MergeCommit moves the group to the epoch of a Commit it created (RFC
// 9420, Section 12.4.1), once the Commit was accepted for delivery. It
// fails with ErrEpochMismatch if the group has moved on since the Commit
// was made, and with errNoPendingCommit for nil, a PendingCommit not made
// by Commit, or one already merged.
func (g *Group) MergeCommit(pc *PendingCommit) error {
	if err := g.usable(); err != nil {
		return err
	}
	if pc == nil || pc.next == nil {
		return errNoPendingCommit
	}
	if pc.base != g.ctx.Epoch {
		return fmt.Errorf("%w: commit was made in epoch %d, group is in %d", ErrEpochMismatch, pc.base, g.ctx.Epoch)
	}
	*g = *pc.next
	pc.next = nil
	return nil
}

// successor returns the group state of the epoch that ch starts: GroupContext
// ctx (with its new tree hash and confirmed transcript hash), the tree and
// private keys after the Commit, the transcript hashes and the key
// schedule.
func (g *Group) successor(ctx *GroupContext, ch *epochChange, nodeKeys map[tm.NodeIndex][]byte, confirmed, tag []byte, e *schedule.Epoch) (*Group, error) {
	next := &Group{
		config:          g.config,
		ctx:             ctx,
		tree:            ch.tree,
		interim:         schedule.InterimTranscriptHash(confirmed, tag),
		confirmationTag: bytes.Clone(tag),
		self:            g.self,
		sigPriv:         g.sigPriv,
		nodeKeys:        nodeKeys,
		reinit:          ch.reinit,
		resumption:      g.rememberResumption(),
	}
	if err := next.installEpoch(e); err != nil {
		return nil, err
	}
	next.carryPast(g)
	return next, nil
}
