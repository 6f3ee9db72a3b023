package mls

import (
	"slices"

	"golang.org/x/crypto/cryptobyte"

	"github.com/torpor-dev/torpor/mls/internal/suite"
	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
)

// Tree hashes, RFC 9420 Section 7.8: each node's hash covers its subtree.
//
//	struct { uint32 leaf_index; optional<LeafNode> leaf_node; } LeafNodeHashInput;
//	struct { optional<ParentNode> parent_node; opaque left_hash<V>; opaque right_hash<V>; } ParentNodeHashInput;
//	struct { NodeType node_type; select (node_type) { ... } } TreeHashInput;
//
// A tree caches the hash of every subtree it computed; every change to a
// node goes through setNode or invalidate, which drop the cached hashes of
// the node and its ancestors. Processing a Commit therefore hashes only the
// changed paths, not every leaf.

// TreeHash returns the tree hash of the root, the tree_hash of the
// GroupContext (RFC 9420, Sections 7.8 and 8.1).
func (t *RatchetTree) TreeHash() []byte {
	return slices.Clone(t.hash(tm.Root(t.n())))
}

// NodeTreeHash returns the tree hash of the subtree under node x (RFC
// 9420, Section 7.8), or nil for a node outside the tree.
func (t *RatchetTree) NodeTreeHash(x uint32) []byte {
	if uint64(x) >= uint64(len(t.nodes)) {
		return nil
	}
	return slices.Clone(t.hash(tm.NodeIndex(x)))
}

// treeHashes returns the tree hash of every node.
func (t *RatchetTree) treeHashes() [][]byte {
	t.hash(tm.Root(t.n()))
	return t.hashes
}

// hash returns the (cached) tree hash of the subtree under x.
func (t *RatchetTree) hash(x tm.NodeIndex) []byte {
	if len(t.hashes) != len(t.nodes) {
		t.hashes = make([][]byte, len(t.nodes))
	}
	if h := t.hashes[x]; h != nil {
		return h
	}
	var h []byte
	if x.IsLeaf() {
		h = t.leafHash(x, false)
	} else {
		h = t.parentHashInput(x, t.nodes[x].Parent, t.hash(tm.Left(x)), t.hash(tm.Right(x)))
	}
	t.hashes[x] = h
	return h
}

// hashExcluding returns the hash of the subtree under x in the tree where
// the leaves in exclude are blank and absent from every unmerged_leaves
// list (the "original" tree of a parent-hash check, RFC 9420, Section 7.9).
// Subtrees without an excluded leaf use the cache.
func (t *RatchetTree) hashExcluding(x tm.NodeIndex, exclude []uint32) []byte {
	first, end := tm.Leaves(x)
	if !slices.ContainsFunc(exclude, func(u uint32) bool { return u >= uint32(first) && u < uint32(end) }) {
		return t.hash(x)
	}
	if x.IsLeaf() {
		return t.leafHash(x, true)
	}
	p := t.nodes[x].Parent
	if p != nil {
		q := &ParentNode{EncryptionKey: p.EncryptionKey, ParentHash: p.ParentHash}
		for _, u := range p.UnmergedLeaves {
			if !slices.Contains(exclude, u) {
				q.UnmergedLeaves = append(q.UnmergedLeaves, u)
			}
		}
		p = q
	}
	return t.parentHashInput(x, p, t.hashExcluding(tm.Left(x), exclude), t.hashExcluding(tm.Right(x), exclude))
}

// leafHash hashes LeafNodeHashInput for leaf node x, as blank if blank is
// set.
func (t *RatchetTree) leafHash(x tm.NodeIndex, blank bool) []byte {
	var b cryptobyte.Builder
	leaf := t.nodes[x].Leaf
	b.AddUint8(uint8(nodeTypeLeaf))
	b.AddUint32(uint32(x.Leaf()))
	addOptional(&b, leaf != nil && !blank, func(b *cryptobyte.Builder) { leaf.marshal(b) })
	return suite.Hash(b.BytesOrPanic())
}

// parentHashInput hashes ParentNodeHashInput for parent x with content p.
func (t *RatchetTree) parentHashInput(x tm.NodeIndex, p *ParentNode, left, right []byte) []byte {
	var b cryptobyte.Builder
	b.AddUint8(uint8(nodeTypeParent))
	addOptional(&b, p != nil, func(b *cryptobyte.Builder) { p.marshal(b) })
	addOpaque(&b, left)
	addOpaque(&b, right)
	return suite.Hash(b.BytesOrPanic())
}

// invalidate drops the cached hashes of x and its ancestors.
func (t *RatchetTree) invalidate(x tm.NodeIndex) {
	if len(t.hashes) != len(t.nodes) {
		t.hashes = nil
		return
	}
	t.hashes[x] = nil
	for _, a := range tm.DirectPath(x, t.n()) {
		t.hashes[a] = nil
	}
}

// setNode replaces node x.
func (t *RatchetTree) setNode(x tm.NodeIndex, n Node) {
	t.nodes[x] = n
	t.invalidate(x)
}
