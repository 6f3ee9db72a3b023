package mls

import (
	"fmt"
	"slices"

	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
)

// Validate checks the tree the way a joiner must (RFC 9420, Section
// 12.4.3.1), except for comparing its TreeHash with the GroupContext, which
// the caller does: unmerged-leaf lists, parent hashes (Section 7.9.2), every
// LeafNode (Section 7.3, with groupID as signature context and without
// lifetime checks), and uniqueness of encryption and signature keys.
// groupExtensions are the GroupContext extensions (for
// required_capabilities). Errors wrap ErrInvalidTree, ErrInvalidLeafNode or
// ErrInvalidSignature.
func (t *RatchetTree) Validate(groupID []byte, groupExtensions []Extension) error {
	return t.validate(groupID, groupExtensions, nil)
}

func (t *RatchetTree) validate(groupID []byte, exts []Extension, credential func(Credential, []byte) error) error {
	if len(t.members()) == 0 {
		return fmt.Errorf("%w: no members", ErrInvalidTree)
	}
	if err := t.checkUnmergedLeaves(); err != nil {
		return err
	}
	if err := t.checkUniqueParentKeys(); err != nil {
		return err
	}
	for _, l := range t.members() {
		err := t.validateLeaf(t.leaf(l), leafCheck{
			groupID: groupID, index: l, extensions: exts, credential: credential,
		})
		if err != nil {
			return fmt.Errorf("%w: leaf %d: %w", ErrInvalidTree, l, err)
		}
	}
	return t.VerifyParentHashes()
}

// checkUnmergedLeaves checks every parent's unmerged_leaves: sorted, each a
// non-blank leaf below the parent, and listed by every non-blank node
// between the leaf and the parent (RFC 9420, Sections 7.1 and 12.4.3.1).
func (t *RatchetTree) checkUnmergedLeaves() error {
	n := t.n()
	for x := tm.NodeIndex(1); uint32(x) < uint32(len(t.nodes)); x += 2 {
		p := t.parent(x)
		if p == nil {
			continue
		}
		for i, u := range p.UnmergedLeaves {
			if i > 0 && p.UnmergedLeaves[i-1] >= u {
				return fmt.Errorf("%w: unmerged leaves of node %d not sorted", ErrInvalidTree, x)
			}
			l := tm.LeafIndex(u)
			if u >= n || t.leaf(l) == nil || !tm.IsAncestor(x, l.Node()) {
				return fmt.Errorf("%w: node %d lists unmerged leaf %d that is not a member below it", ErrInvalidTree, x, u)
			}
			for _, a := range tm.DirectPath(l.Node(), n) {
				if a == x {
					break
				}
				if ap := t.parent(a); ap != nil && !slices.Contains(ap.UnmergedLeaves, u) {
					return fmt.Errorf("%w: node %d between leaf %d and node %d does not list it as unmerged", ErrInvalidTree, a, u, x)
				}
			}
		}
	}
	return nil
}

// checkUniqueParentKeys checks that no two nodes share an encryption key
// (RFC 9420, Section 12.4.3.1; leaves are checked in validateLeaf).
func (t *RatchetTree) checkUniqueParentKeys() error {
	seen := make(map[string]tm.NodeIndex)
	for x, nd := range t.nodes {
		if nd.Blank() {
			continue
		}
		k := string(nd.encryptionKey())
		if o, dup := seen[k]; dup {
			return fmt.Errorf("%w: nodes %d and %d share an encryption key", ErrInvalidTree, o, x)
		}
		seen[k] = tm.NodeIndex(x)
	}
	return nil
}
