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

// TreeHash returns the tree hash of the root, the tree_hash of the
// GroupContext.
func (t *RatchetTree) TreeHash() []byte {
	return t.treeHash(tm.Root(t.n()), nil, nil)
}

// NodeTreeHash returns the tree hash of the subtree under node x.
func (t *RatchetTree) NodeTreeHash(x uint32) []byte {
	return t.treeHash(tm.NodeIndex(x), nil, nil)
}

// treeHashes returns the tree hash of every node.
func (t *RatchetTree) treeHashes() [][]byte {
	out := make([][]byte, len(t.nodes))
	t.treeHash(tm.Root(t.n()), nil, out)
	return out
}

// treeHash returns the hash of the subtree under x in the tree where the
// leaves in exclude are blank and absent from every unmerged_leaves list
// (the "original" tree of a parent-hash check, RFC 9420, Section 7.9). If
// memo is non-nil the hash of every node visited is stored in it.
func (t *RatchetTree) treeHash(x tm.NodeIndex, exclude []uint32, memo [][]byte) []byte {
	var b cryptobyte.Builder
	n := t.nodes[x]
	if x.IsLeaf() {
		b.AddUint8(uint8(nodeTypeLeaf))
		b.AddUint32(uint32(x.Leaf()))
		present := n.Leaf != nil && !slices.Contains(exclude, uint32(x.Leaf()))
		addOptional(&b, present, func(b *cryptobyte.Builder) { n.Leaf.marshal(b) })
	} else {
		left := t.treeHash(tm.Left(x), exclude, memo)
		right := t.treeHash(tm.Right(x), exclude, memo)
		b.AddUint8(uint8(nodeTypeParent))
		addOptional(&b, n.Parent != nil, func(b *cryptobyte.Builder) {
			p := n.Parent
			if len(exclude) > 0 {
				p = &ParentNode{EncryptionKey: p.EncryptionKey, ParentHash: p.ParentHash}
				for _, u := range n.Parent.UnmergedLeaves {
					if !slices.Contains(exclude, u) {
						p.UnmergedLeaves = append(p.UnmergedLeaves, u)
					}
				}
			}
			p.marshal(b)
		})
		addOpaque(&b, left)
		addOpaque(&b, right)
	}
	h := suite.Hash(b.BytesOrPanic())
	if memo != nil {
		memo[x] = h
	}
	return h
}
