package mls

import (
	"bytes"
	"crypto/ed25519"
	"fmt"

	"github.com/torpor-dev/torpor/mls/internal/schedule"
	"github.com/torpor-dev/torpor/mls/internal/suite"
	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
)

// ExternalJoinOptions tunes JoinExternal (RFC 9420, Section 12.4.3.2).
type ExternalJoinOptions struct {
	// Tree is the group's ratchet tree obtained out of band, or nil when
	// the GroupInfo carries a ratchet_tree extension.
	Tree *RatchetTree
	// Resync, when set, removes the leaf at this index in the same Commit:
	// a client that lost its state rejoins and replaces its old appearance
	// (RFC 9420, Section 12.4.3.2).
	Resync *uint32
	// AuthenticatedData is carried in the clear, authenticated.
	AuthenticatedData []byte
}

// JoinExternal joins a group by external Commit (RFC 9420, Sections 8.3
// and 12.4.3.2) from a GroupInfo that carries an external_pub extension.
// It verifies the GroupInfo and the tree as Join does, encapsulates a new
// init_secret to external_pub (ExternalInit proposal), adds this client at
// the leftmost blank leaf with a fresh UpdatePath, and returns the new
// member's group, already in the new epoch, together with the Commit to
// send (a PublicMessage from a new_member_commit sender). If the delivery
// service rejects the Commit, discard the returned group.
//
// Errors: ErrInvalidWelcome when the GroupInfo has no external_pub, or its
// tree does not match; ErrInvalidSignature; ErrInvalidTree; and
// ErrInvalidProposal for a Resync index that is blank.
func JoinExternal(cfg *Config, gi *GroupInfo, cred Credential, sigPriv ed25519.PrivateKey, opts *ExternalJoinOptions) (_ *Group, _ *MLSMessage, err error) {
	defer recoverInput(&err)
	if cfg == nil {
		cfg = &Config{}
	}
	if opts == nil {
		opts = &ExternalJoinOptions{}
	}
	if len(sigPriv) != ed25519.PrivateKeySize {
		return nil, nil, suite.ErrBadSignatureKey
	}
	tree, externalPub, err := checkExternalGroupInfo(cfg, gi, opts.Tree)
	if err != nil {
		return nil, nil, err
	}
	kemOutput, initSecret, err := schedule.ExternalInit(externalPub)
	if err != nil {
		return nil, nil, err
	}
	x := &externalJoin{cfg: cfg, gi: gi, sigPriv: sigPriv, opts: opts, initSecret: initSecret}
	x.base = &Group{config: *cfg, ctx: gi.GroupContext.clone(), tree: tree, self: tm.LeafIndex(^uint32(0))}
	x.commit = &Commit{Proposals: []ProposalOrRef{{Proposal: &ExternalInitProposal{KEMOutput: kemOutput}}}}
	if opts.Resync != nil {
		x.commit.Proposals = append(x.commit.Proposals, ProposalOrRef{Proposal: &RemoveProposal{Removed: *opts.Resync}})
	}
	steps := []func() error{x.apply, func() error { return x.path(cred) }, x.frame, x.schedule, x.protect, x.group}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, nil, err
		}
	}
	return x.g, x.msg, nil
}

// checkExternalGroupInfo verifies a GroupInfo for an external join (see
// verifyGroupInfo) and returns its tree and external_pub.
func checkExternalGroupInfo(cfg *Config, gi *GroupInfo, outOfBand *RatchetTree) (*RatchetTree, []byte, error) {
	ctx := &gi.GroupContext
	if ctx.CipherSuite != CipherSuiteX25519AES128SHA256Ed25519 || ctx.Version != ProtocolMLS10 {
		return nil, nil, ErrUnsupportedCipherSuite
	}
	ext := findExtension(gi.Extensions, ExtensionTypeExternalPub)
	if ext == nil {
		return nil, nil, fmt.Errorf("%w: GroupInfo has no external_pub", ErrInvalidWelcome)
	}
	pub, err := ParseExternalPub(ext.Data)
	if err != nil {
		return nil, nil, err
	}
	tree, err := verifyGroupInfo(cfg, gi, outOfBand)
	if err != nil {
		return nil, nil, err
	}
	return tree, pub, nil
}

// externalJoin carries an external Commit being created through its steps.
type externalJoin struct {
	cfg        *Config
	gi         *GroupInfo
	sigPriv    ed25519.PrivateKey
	opts       *ExternalJoinOptions
	initSecret []byte

	base      *Group // the group as the GroupInfo describes it, without secrets
	commit    *Commit
	ch        *epochChange
	self      tm.LeafIndex
	pu        *pathUpdate
	ctx       *GroupContext // of the new epoch
	content   *FramedContent
	protector *Protector // of the GroupInfo's epoch, for signing only
	confirmed []byte
	epoch     *schedule.Epoch
	tag       []byte
	msg       *MLSMessage
	g         *Group
}

// apply validates and applies the Commit's proposals (RFC 9420, Section
// 12.2 for external Commits) and picks our leaf: the leftmost blank one
// after them, as members will (Section 12.4.3.2).
func (x *externalJoin) apply() error {
	var list []committedProposal
	sender := Sender{Type: SenderTypeNewMemberCommit}
	for _, por := range x.commit.Proposals {
		list = append(list, committedProposal{proposal: por.Proposal, sender: sender})
	}
	ch, err := x.base.applyProposals(list, sender, true, true)
	if err != nil {
		return err
	}
	x.ch = ch
	x.self = ch.tree.leftmostBlank()
	return nil
}

// path creates our leaf and its UpdatePath, encrypted under the
// provisional GroupContext (RFC 9420, Sections 7.5, 7.6 and 12.4.1).
func (x *externalJoin) path(cred Credential) error {
	leaf, _, err := newLeafNode(x.cfg, cred, x.sigPriv)
	if err != nil {
		return err
	}
	old := x.base.ctx
	t := x.ch.tree
	pu, err := t.createPath(x.self, leaf, x.sigPriv, old.GroupID, x.cfg.rand())
	if err != nil {
		return err
	}
	x.ctx = &GroupContext{
		Version: old.Version, CipherSuite: old.CipherSuite, GroupID: bytes.Clone(old.GroupID),
		Epoch: old.Epoch + 1, TreeHash: t.TreeHash(), ConfirmedTranscriptHash: old.ConfirmedTranscriptHash,
		Extensions: x.ch.extensions,
	}
	up, err := pu.encrypt(t, x.ctx.Marshal(), nil)
	if err != nil {
		return err
	}
	x.commit.Path, x.pu = up, pu
	return nil
}

// frame signs the Commit as a new_member_commit sender and computes the
// new epoch's confirmed transcript hash from the GroupInfo's (RFC 9420,
// Sections 6.1 and 8.2).
func (x *externalJoin) frame() error {
	old := x.base.ctx
	x.content = &FramedContent{
		GroupID: bytes.Clone(old.GroupID), Epoch: old.Epoch,
		Sender:            Sender{Type: SenderTypeNewMemberCommit},
		AuthenticatedData: bytes.Clone(x.opts.AuthenticatedData),
		ContentType:       ContentTypeCommit, Commit: x.commit,
	}
	x.protector = &Protector{ctx: old}
	sig, err := x.protector.sign(WireFormatPublicMessage, x.content, x.sigPriv)
	if err != nil {
		return err
	}
	ac := &AuthenticatedContent{WireFormat: WireFormatPublicMessage, Content: *x.content, Auth: FramedContentAuthData{Signature: sig}}
	interim := schedule.InterimTranscriptHash(old.ConfirmedTranscriptHash, x.gi.ConfirmationTag)
	x.confirmed = schedule.ConfirmedTranscriptHash(interim, ac.ConfirmedTranscriptHashInput())
	x.ctx.ConfirmedTranscriptHash = x.confirmed
	return nil
}

// schedule derives the new epoch from the external init secret and the
// path's commit secret, and the confirmation tag (RFC 9420, Sections 8,
// 8.3 and 6.1).
func (x *externalJoin) schedule() error {
	_, x.epoch = schedule.Next(x.initSecret, x.pu.commitSecret, nil, x.ctx.Marshal())
	x.tag = schedule.ConfirmationTag(x.epoch.ConfirmationKey, x.confirmed)
	return nil
}

// protect wraps the Commit in a PublicMessage (external Commits are never
// encrypted, RFC 9420 Section 12.4.3.2). Ed25519 is deterministic, so the
// signature is the one the transcript hash covers.
func (x *externalJoin) protect() error {
	pm, err := x.protector.ProtectPublic(x.content, x.sigPriv, x.tag)
	if err != nil {
		return err
	}
	x.msg = &MLSMessage{Version: ProtocolMLS10, WireFormat: WireFormatPublicMessage, PublicMessage: pm}
	return nil
}

// group builds the new member's state in the new epoch.
func (x *externalJoin) group() error {
	x.g = &Group{
		config:          *x.cfg,
		ctx:             x.ctx,
		tree:            x.ch.tree,
		interim:         schedule.InterimTranscriptHash(x.confirmed, x.tag),
		confirmationTag: x.tag,
		self:            x.self,
		sigPriv:         x.sigPriv,
		nodeKeys:        x.pu.keys,
	}
	return x.g.installEpoch(x.epoch)
}
