package mls

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/torpor-dev/torpor/mls/internal/suite"
	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
)

// Proposals: references, validation of single proposals and of committed
// lists, and applying a list to the tree and GroupContext (RFC 9420,
// Sections 5.2, 12.1, 12.2 and 12.3).

// proposalRef returns MakeProposalRef of the AuthenticatedContent that
// carried a proposal (RFC 9420, Section 5.2).
func proposalRef(ac *AuthenticatedContent) []byte {
	return suite.ProposalRef(ac.Marshal())
}

// committedProposal is one proposal of a Commit with its sender: the
// committer for proposals by value, the original sender for references.
type committedProposal struct {
	proposal Proposal
	sender   Sender
}

// externalProposalTypes are the proposals an external sender may send (RFC
// 9420, Section 12.1.8).
var externalProposalTypes = []ProposalType{
	ProposalTypeAdd, ProposalTypeRemove, ProposalTypePSK, ProposalTypeReInit, ProposalTypeGroupContextExtensions,
}

// pathRequiredTypes are the proposals that require a Commit to carry a path
// (RFC 9420, Section 12.4). Unknown proposal types are rejected before this
// matters.
var pathRequiredTypes = []ProposalType{
	ProposalTypeUpdate, ProposalTypeRemove, ProposalTypeExternalInit, ProposalTypeGroupContextExtensions,
}

// checkProposalSender applies the sender rules of RFC 9420, Sections 6 and
// 12.1.8 to a proposal received in a message.
func checkProposalSender(p Proposal, s Sender) error {
	switch s.Type {
	case SenderTypeMember:
		if p.ProposalType() == ProposalTypeExternalInit {
			return fmt.Errorf("%w: ExternalInit sent as a standalone proposal", ErrInvalidProposal)
		}
	case SenderTypeExternal:
		if !slices.Contains(externalProposalTypes, p.ProposalType()) {
			return fmt.Errorf("%w: proposal type %d from an external sender", ErrInvalidProposal, p.ProposalType())
		}
	case SenderTypeNewMemberProposal:
		if p.ProposalType() != ProposalTypeAdd {
			return fmt.Errorf("%w: new_member_proposal sender with proposal type %d", ErrInvalidProposal, p.ProposalType())
		}
	default:
		return fmt.Errorf("%w: sender type %d cannot send proposals", ErrInvalidProposal, s.Type)
	}
	return nil
}

// epochChange is the result of applying a Commit's proposals to the old
// tree and GroupContext (RFC 9420, Section 12.3).
type epochChange struct {
	tree *RatchetTree
	// extensions are the GroupContext extensions of the new epoch.
	extensions []Extension
	// added are the new members' leaves and KeyPackages, in list order.
	added    []tm.LeafIndex
	addedKPs []*KeyPackage
	psks     []PreSharedKeyID
	// externalInit is the kem_output of an external Commit.
	externalInit []byte
	reinit       *ReInitProposal
	// pathRequired reports whether the Commit must carry a path.
	pathRequired bool
	// removedSelf reports whether a Remove removed this client; selfUpdate
	// is this client's new leaf from a committed Update of its own.
	removedSelf bool
	selfUpdate  *LeafNode
	// ours reports whether this client makes the Commit (or proposal):
	// only then are KeyPackage lifetimes checked (see LifetimePolicy).
	ours bool
}

// applyProposals validates a committed list (RFC 9420, Section 12.2) and
// applies it in the order of Section 12.3 to a copy of the group's tree.
// committer is the Commit's sender; external reports an external Commit;
// ours reports that this client makes the Commit or proposal (only then
// are KeyPackage lifetimes checked).
func (g *Group) applyProposals(list []committedProposal, committer Sender, external, ours bool) (*epochChange, error) {
	if err := g.validateList(list, committer, external); err != nil {
		return nil, err
	}
	ch := &epochChange{tree: g.tree.clone(), extensions: g.ctx.Extensions, pathRequired: len(list) == 0, ours: ours}
	for _, cp := range list {
		if slices.Contains(pathRequiredTypes, cp.proposal.ProposalType()) {
			ch.pathRequired = true
		}
	}
	steps := []func(*epochChange, []committedProposal) error{
		g.applyGroupContextExtensions, g.applyUpdates, g.applyRemoves, g.applyAdds, g.applyRest,
	}
	for _, step := range steps {
		if err := step(ch, list); err != nil {
			return nil, err
		}
	}
	return ch, nil
}

// validateList checks the rules of RFC 9420, Section 12.2 that concern the
// list as a whole and the sender of each proposal.
func (g *Group) validateList(list []committedProposal, committer Sender, external bool) error {
	if external {
		return validateExternalList(list)
	}
	counts := map[ProposalType]int{}
	touched := map[uint32]bool{} // leaves updated or removed
	var psks []*PreSharedKeyID
	for _, cp := range list {
		t := cp.proposal.ProposalType()
		counts[t]++
		switch p := cp.proposal.(type) {
		case *UpdateProposal:
			if cp.sender.Type != SenderTypeMember || cp.sender == committer {
				return fmt.Errorf("%w: Update from the committer or a non-member", ErrInvalidProposal)
			}
			if touched[cp.sender.Index] {
				return fmt.Errorf("%w: several Updates or Removes for leaf %d", ErrInvalidProposal, cp.sender.Index)
			}
			touched[cp.sender.Index] = true
		case *RemoveProposal:
			if committer.Type == SenderTypeMember && p.Removed == committer.Index {
				return fmt.Errorf("%w: the committer removes itself", ErrInvalidProposal)
			}
			if touched[p.Removed] {
				return fmt.Errorf("%w: several Updates or Removes for leaf %d", ErrInvalidProposal, p.Removed)
			}
			touched[p.Removed] = true
		case *PreSharedKeyProposal:
			for _, o := range psks {
				if o.sameKey(&p.PSK) {
					return fmt.Errorf("%w: the same PSK twice", ErrInvalidProposal)
				}
			}
			psks = append(psks, &p.PSK)
		case *ExternalInitProposal:
			return fmt.Errorf("%w: ExternalInit in a member's Commit", ErrInvalidProposal)
		case *UnknownProposal:
			return fmt.Errorf("%w: unsupported proposal type %d", ErrInvalidProposal, t)
		}
	}
	if counts[ProposalTypeGroupContextExtensions] > 1 {
		return fmt.Errorf("%w: several GroupContextExtensions proposals", ErrInvalidProposal)
	}
	if counts[ProposalTypeReInit] > 0 && len(list) > 1 {
		return fmt.Errorf("%w: ReInit together with other proposals", ErrInvalidProposal)
	}
	return nil
}

// validateExternalList checks the proposal list of an external Commit (RFC
// 9420, Section 12.2): exactly one ExternalInit, at most one Remove, any
// number of PreSharedKey proposals and nothing else.
func validateExternalList(list []committedProposal) error {
	counts := map[ProposalType]int{}
	for _, cp := range list {
		t := cp.proposal.ProposalType()
		counts[t]++
		switch t {
		case ProposalTypeExternalInit, ProposalTypeRemove, ProposalTypePSK:
		default:
			return fmt.Errorf("%w: proposal type %d in an external Commit", ErrInvalidProposal, t)
		}
	}
	if counts[ProposalTypeExternalInit] != 1 || counts[ProposalTypeRemove] > 1 {
		return fmt.Errorf("%w: an external Commit needs one ExternalInit and at most one Remove", ErrInvalidProposal)
	}
	return nil
}

// applyGroupContextExtensions replaces the extensions (RFC 9420, Section
// 12.1.7). Every member that stays must support them; that is checked
// after the Adds and Removes, in applyRest.
func (g *Group) applyGroupContextExtensions(ch *epochChange, list []committedProposal) error {
	for _, cp := range list {
		if p, ok := cp.proposal.(*GroupContextExtensionsProposal); ok {
			if err := validateGroupContextExtensions(p.Extensions); err != nil {
				return err
			}
			ch.extensions = cloneExtensions(p.Extensions)
		}
	}
	return nil
}

// applyUpdates replaces the senders' leaves (RFC 9420, Section 12.1.2).
func (g *Group) applyUpdates(ch *epochChange, list []committedProposal) error {
	for _, cp := range list {
		p, ok := cp.proposal.(*UpdateProposal)
		if !ok {
			continue
		}
		l := tm.LeafIndex(cp.sender.Index)
		old := ch.tree.Leaf(cp.sender.Index)
		if old == nil {
			return fmt.Errorf("%w: Update from blank leaf %d", ErrInvalidProposal, l)
		}
		if bytes.Equal(old.EncryptionKey, p.LeafNode.EncryptionKey) {
			return fmt.Errorf("%w: Update keeps the encryption key of leaf %d", ErrInvalidProposal, l)
		}
		err := ch.tree.validateLeaf(&p.LeafNode, leafCheck{
			groupID: g.ctx.GroupID, index: l, source: LeafNodeSourceUpdate,
			extensions: ch.extensions, credential: g.config.credential(), successor: g.config.successor(),
		})
		if err != nil {
			return fmt.Errorf("%w: Update of leaf %d: %w", ErrInvalidProposal, l, err)
		}
		ch.tree.updateLeaf(l, p.LeafNode.clone())
		if l == g.self {
			ch.selfUpdate = ch.tree.leaf(l)
		}
	}
	return nil
}

// applyRemoves removes leaves and truncates the tree (RFC 9420, Section
// 12.1.3).
func (g *Group) applyRemoves(ch *epochChange, list []committedProposal) error {
	for _, cp := range list {
		p, ok := cp.proposal.(*RemoveProposal)
		if !ok {
			continue
		}
		if ch.tree.Leaf(p.Removed) == nil {
			return fmt.Errorf("%w: Remove of blank leaf %d", ErrInvalidProposal, p.Removed)
		}
		ch.tree.removeLeaf(tm.LeafIndex(p.Removed))
		if tm.LeafIndex(p.Removed) == g.self {
			ch.removedSelf = true
		}
	}
	return nil
}

// applyAdds validates each KeyPackage (RFC 9420, Section 10.1) and adds its
// leaf (Section 12.1.1). Two Adds of one client, or of a client already in
// the group, are invalid (Section 12.2); clients are identified by their
// signature keys.
func (g *Group) applyAdds(ch *epochChange, list []committedProposal) error {
	for _, cp := range list {
		p, ok := cp.proposal.(*AddProposal)
		if !ok {
			continue
		}
		kp := &p.KeyPackage
		cfg := g.config
		if !ch.ours {
			// A Commit may reach us long after it was made (a sleeping
			// device drains a queue); members that check lifetimes at
			// different times would fork the group. RFC 9420, Section 7.3
			// only recommends the check for received messages.
			cfg.Time = nil
			cfg.MaxLifetime = 0
			cfg.skipLifetime = true
		}
		if err := kp.Verify(&cfg); err != nil {
			return fmt.Errorf("%w: Add: %w", ErrInvalidProposal, err)
		}
		if kp.CipherSuite != g.ctx.CipherSuite || kp.Version != g.ctx.Version {
			return fmt.Errorf("%w: Add of a KeyPackage for another suite or version", ErrInvalidProposal)
		}
		if err := checkSupportsGroup(&kp.LeafNode.Capabilities, ch.extensions); err != nil {
			return fmt.Errorf("%w: Add: %w", ErrInvalidProposal, err)
		}
		if err := ch.tree.checkCredentialTypes(&kp.LeafNode, tm.LeafIndex(ch.tree.NumLeaves())); err != nil {
			return fmt.Errorf("%w: Add: %w", ErrInvalidProposal, err)
		}
		if err := ch.tree.checkUniqueKeys(&kp.LeafNode, tm.LeafIndex(ch.tree.NumLeaves())); err != nil {
			return fmt.Errorf("%w: Add of a client already in the group: %w", ErrInvalidProposal, err)
		}
		ch.added = append(ch.added, ch.tree.addLeaf(kp.LeafNode.clone()))
		ch.addedKPs = append(ch.addedKPs, kp)
	}
	return nil
}

// applyRest records PSKs, ExternalInit and ReInit (RFC 9420, Section 12.3)
// and checks that every member supports the new GroupContext extensions
// (Section 12.1.7).
func (g *Group) applyRest(ch *epochChange, list []committedProposal) error {
	for _, cp := range list {
		switch p := cp.proposal.(type) {
		case *PreSharedKeyProposal:
			if len(p.PSK.Nonce) != suite.HashSize {
				return fmt.Errorf("%w: psk_nonce of %d bytes", ErrInvalidProposal, len(p.PSK.Nonce))
			}
			if p.PSK.Type == PSKTypeResumption && p.PSK.Usage != ResumptionPSKUsageApplication {
				return fmt.Errorf("%w: resumption PSK with usage %d in a proposal", ErrInvalidProposal, p.PSK.Usage)
			}
			ch.psks = append(ch.psks, p.PSK)
		case *ExternalInitProposal:
			ch.externalInit = p.KEMOutput
		case *ReInitProposal:
			if p.Version < g.ctx.Version {
				return fmt.Errorf("%w: ReInit to an older version", ErrInvalidProposal)
			}
			ch.reinit = p
		case *GroupContextExtensionsProposal:
			for _, l := range ch.tree.members() {
				if err := checkSupportsGroup(&ch.tree.leaf(l).Capabilities, ch.extensions); err != nil {
					return fmt.Errorf("%w: GroupContextExtensions: leaf %d: %w", ErrInvalidProposal, l, err)
				}
			}
		}
	}
	return nil
}
