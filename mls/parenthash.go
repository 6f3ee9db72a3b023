package mls

import (
	"bytes"
	"fmt"
	"slices"

	"golang.org/x/crypto/cryptobyte"

	"github.com/torpor-dev/torpor/mls/internal/suite"
	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
)

// Parent hashes, RFC 9420 Section 7.9.
//
//	struct {
//	    HPKEPublicKey encryption_key;
//	    opaque parent_hash<V>;
//	    opaque original_sibling_tree_hash<V>;
//	} ParentHashInput;

// parentHash returns the parent hash of parent node p given the tree hash
// of its copath child.
func parentHash(p *ParentNode, siblingHash []byte) []byte {
	var b cryptobyte.Builder
	addOpaque(&b, p.EncryptionKey)
	addOpaque(&b, p.ParentHash)
	addOpaque(&b, siblingHash)
	return suite.Hash(b.BytesOrPanic())
}

// originalSiblingHash returns the tree hash of s, the copath child of
// parent p, with p's unmerged leaves blanked (RFC 9420, Section 7.9).
func (t *RatchetTree) originalSiblingHash(p *ParentNode, s tm.NodeIndex) []byte {
	first, end := tm.Leaves(s)
	var excl []uint32
	for _, u := range p.UnmergedLeaves {
		if u >= uint32(first) && u < uint32(end) {
			excl = append(excl, u)
		}
	}
	return t.hashExcluding(s, excl)
}

// nodeParentHash returns the parent_hash field of node x (a parent, or a
// leaf with source commit), or nil.
func (t *RatchetTree) nodeParentHash(x tm.NodeIndex) []byte {
	n := t.nodes[x]
	switch {
	case n.Parent != nil:
		return n.Parent.ParentHash
	case n.Leaf != nil && n.Leaf.Source == LeafNodeSourceCommit:
		return n.Leaf.ParentHash
	}
	return nil
}

// VerifyParentHashes checks that every non-blank parent node is
// parent-hash valid (RFC 9420, Section 7.9.2), top down: each must be the
// target of exactly one parent-hash link from a node below it.
func (t *RatchetTree) VerifyParentHashes() error {
	n := t.n()
	for x := tm.NodeIndex(1); uint32(x) < uint32(len(t.nodes)); x += 2 {
		p := t.parent(x)
		if p == nil {
			continue
		}
		links := 0
		for _, c := range []tm.NodeIndex{tm.Left(x), tm.Right(x)} {
			s := tm.Sibling(c, n)
			ph := parentHash(p, t.originalSiblingHash(p, s))
			res := t.resolution(c)
			for _, d := range res {
				if bytes.Equal(t.nodeParentHash(d), ph) && t.unmergedMatches(p, c, d, res) {
					links++
				}
			}
		}
		if links != 1 {
			return fmt.Errorf("%w: parent node %d is the target of %d parent-hash links, want 1", ErrInvalidTree, x, links)
		}
	}
	return nil
}

// unmergedMatches reports whether the unmerged leaves of parent p under its
// child c are exactly the resolution of c without d (RFC 9420, Section
// 7.9.2).
func (t *RatchetTree) unmergedMatches(p *ParentNode, c, d tm.NodeIndex, res []tm.NodeIndex) bool {
	first, end := tm.Leaves(c)
	var unmerged []tm.NodeIndex
	for _, u := range p.UnmergedLeaves {
		if u >= uint32(first) && u < uint32(end) {
			unmerged = append(unmerged, tm.LeafIndex(u).Node())
		}
	}
	var rest []tm.NodeIndex
	for _, r := range res {
		if r != d {
			rest = append(rest, r)
		}
	}
	slices.Sort(unmerged)
	slices.Sort(rest)
	return slices.Equal(unmerged, rest)
}

// setParentHashes computes the parent_hash fields along the filtered direct
// path of leaf l after an UpdatePath was merged (RFC 9420, Section 7.9),
// setting them in the parent nodes, and returns the value for the leaf.
func (t *RatchetTree) setParentHashes(l tm.LeafIndex) []byte {
	path, copath := t.filteredDirectPath(l)
	var next []byte // the parent hash the node below the current one gets
	for i := len(path) - 1; i >= 0; i-- {
		p := t.parent(path[i])
		p.ParentHash = next
		t.invalidate(path[i])
		next = parentHash(p, t.hash(copath[i]))
	}
	return next
}
