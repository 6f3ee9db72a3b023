// Package treemath is the index arithmetic of RFC 9420's array-based ratchet
// trees (Section 4.2 and Appendix C).
//
// Nodes are numbered left to right in an in-order traversal: leaf L is node
// 2L and parent nodes have odd indices. Trees are always full (the leaf
// count is a power of two), as RFC 9420 requires; callers pass the leaf
// count as n. Functions panic on indices outside the tree, which are
// programming errors: input from the wire is checked before it reaches
// them.
package treemath

import "math/bits"

// NodeIndex is the index of a node in the array representation.
type NodeIndex uint32

// LeafIndex is the index of a leaf among the leaves.
type LeafIndex uint32

// Node returns the node index of leaf l.
func (l LeafIndex) Node() NodeIndex { return NodeIndex(2 * l) }

// IsLeaf reports whether x is a leaf.
func (x NodeIndex) IsLeaf() bool { return x&1 == 0 }

// Leaf returns the leaf index of leaf node x.
func (x NodeIndex) Leaf() LeafIndex {
	if !x.IsLeaf() {
		panic("treemath: not a leaf")
	}
	return LeafIndex(x >> 1)
}

// Level returns the level of x: 0 for leaves, k for a parent whose index
// ends in exactly k one bits.
func Level(x NodeIndex) uint {
	return uint(bits.TrailingZeros32(^uint32(x)))
}

// NodeWidth returns the number of nodes of a tree with n leaves.
func NodeWidth(n uint32) uint32 {
	if n == 0 {
		return 0
	}
	return 2*(n-1) + 1
}

// Root returns the root of a tree with n leaves.
func Root(n uint32) NodeIndex {
	w := NodeWidth(n)
	return NodeIndex(uint32(1)<<(bits.Len32(w)-1) - 1)
}

// Left returns the left child of parent x.
func Left(x NodeIndex) NodeIndex {
	k := Level(x)
	if k == 0 {
		panic("treemath: leaf has no children")
	}
	return x ^ (1 << (k - 1))
}

// Right returns the right child of parent x.
func Right(x NodeIndex) NodeIndex {
	k := Level(x)
	if k == 0 {
		panic("treemath: leaf has no children")
	}
	return x ^ (3 << (k - 1))
}

// Parent returns the parent of x in a tree with n leaves.
func Parent(x NodeIndex, n uint32) NodeIndex {
	if x == Root(n) {
		panic("treemath: root has no parent")
	}
	k := Level(x)
	b := (x >> (k + 1)) & 1
	return (x | (1 << k)) ^ (b << (k + 1))
}

// Sibling returns the other child of x's parent.
func Sibling(x NodeIndex, n uint32) NodeIndex {
	p := Parent(x, n)
	if x < p {
		return Right(p)
	}
	return Left(p)
}

// DirectPath returns the ancestors of x, from its parent to the root.
func DirectPath(x NodeIndex, n uint32) []NodeIndex {
	r := Root(n)
	var d []NodeIndex
	for x != r {
		x = Parent(x, n)
		d = append(d, x)
	}
	return d
}

// Copath returns the siblings of x and of its ancestors below the root,
// ordered from x upwards.
func Copath(x NodeIndex, n uint32) []NodeIndex {
	r := Root(n)
	var c []NodeIndex
	for x != r {
		c = append(c, Sibling(x, n))
		x = Parent(x, n)
	}
	return c
}

// IsAncestor reports whether a is x or one of x's ancestors.
func IsAncestor(a, x NodeIndex) bool {
	k := Level(a) + 1
	return Level(x) < k && x>>k == a>>k
}

// CommonAncestor returns the lowest node on the direct paths (or equal to)
// both x and y.
func CommonAncestor(x, y NodeIndex) NodeIndex {
	lx, ly := Level(x)+1, Level(y)+1
	if lx <= ly && x>>ly == y>>ly {
		return y
	}
	if ly <= lx && x>>lx == y>>lx {
		return x
	}
	xn, yn := x, y
	k := uint(0)
	for xn != yn {
		xn, yn = xn>>1, yn>>1
		k++
	}
	return xn<<k + 1<<(k-1) - 1
}

// Leaves returns the range of leaves [first, end) below node x.
func Leaves(x NodeIndex) (first, end LeafIndex) {
	k := Level(x)
	lo := uint32(x) + 1 - 1<<k // leftmost node index of the subtree
	return LeafIndex(lo / 2), LeafIndex(lo/2 + 1<<k)
}
