package mls

import (
	"bytes"
	"fmt"
	"slices"

	"golang.org/x/crypto/cryptobyte"

	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
)

// ParentNode is the content of a non-blank parent node (RFC 9420, Section
// 7.1). UnmergedLeaves holds leaf indices in increasing order.
type ParentNode struct {
	EncryptionKey  []byte
	ParentHash     []byte
	UnmergedLeaves []uint32
}

func (p *ParentNode) marshal(b *cryptobyte.Builder) {
	addOpaque(b, p.EncryptionKey)
	addOpaque(b, p.ParentHash)
	addUint32s(b, p.UnmergedLeaves)
}

func (p *ParentNode) unmarshal(d *decoder) bool {
	*p = ParentNode{}
	return d.opaque("encryption_key", &p.EncryptionKey) && d.opaque("parent_hash", &p.ParentHash) &&
		readUint32s(d, "unmerged_leaves", &p.UnmergedLeaves)
}

func (p *ParentNode) clone() *ParentNode {
	return &ParentNode{
		EncryptionKey:  bytes.Clone(p.EncryptionKey),
		ParentHash:     bytes.Clone(p.ParentHash),
		UnmergedLeaves: slices.Clone(p.UnmergedLeaves),
	}
}

// NodeType tells a leaf from a parent in a serialised tree (RFC 9420,
// Section 7.8).
type nodeType uint8

const (
	nodeTypeLeaf   nodeType = 1
	nodeTypeParent nodeType = 2
)

// A Node is one node of a ratchet tree (RFC 9420, Section 12.4.3.3): a leaf
// (Leaf set), a parent (Parent set) or blank (neither, Section 4.1.1).
type Node struct {
	Leaf   *LeafNode
	Parent *ParentNode
}

// Blank reports whether n is blank (RFC 9420, Section 4.1.1).
func (n Node) Blank() bool { return n.Leaf == nil && n.Parent == nil }

func (n Node) encryptionKey() []byte {
	switch {
	case n.Leaf != nil:
		return n.Leaf.EncryptionKey
	case n.Parent != nil:
		return n.Parent.EncryptionKey
	}
	return nil
}

func (n Node) clone() Node {
	switch {
	case n.Leaf != nil:
		return Node{Leaf: n.Leaf.clone()}
	case n.Parent != nil:
		return Node{Parent: n.Parent.clone()}
	}
	return Node{}
}

// A RatchetTree is the public state of a group's ratchet tree (RFC 9420,
// Section 7) in the array representation of Appendix C: node i is leaf i/2
// when i is even and a parent when i is odd. The tree is always full: it
// has a power-of-two number of leaves, blank ones included.
type RatchetTree struct {
	nodes []Node
	// hashes caches tree hashes by node (see treehash.go); a nil entry is
	// not computed yet.
	hashes [][]byte
}

// newRatchetTree returns a one-leaf tree holding leaf.
func newRatchetTree(leaf *LeafNode) *RatchetTree {
	return &RatchetTree{nodes: []Node{{Leaf: leaf}}}
}

// ParseRatchetTree decodes optional<Node> ratchet_tree<V> as carried in the
// ratchet_tree extension or out of band (RFC 9420, Section 12.4.3.3). The
// last node must be non-blank; the tree is then padded with blanks to the
// next full size. A node of the wrong type for its position is malformed.
// ParseRatchetTree checks only the syntax: see RatchetTree.Validate.
func ParseRatchetTree(data []byte) (*RatchetTree, error) {
	var t RatchetTree
	if err := decodeAll(data, &t, "RatchetTree"); err != nil {
		return nil, err
	}
	return &t, nil
}

func (t *RatchetTree) unmarshal(d *decoder) bool {
	t.nodes = nil
	start := d.offset()
	ok := d.vector("ratchet_tree", func(d *decoder) bool {
		var present bool
		if !d.optional("", &present) {
			return false
		}
		var n Node
		if present {
			var typ uint8
			if !d.u8("node_type", &typ) {
				return false
			}
			leafPos := len(t.nodes)%2 == 0
			switch {
			case nodeType(typ) == nodeTypeLeaf && leafPos:
				n.Leaf = new(LeafNode)
				if !d.sub("leaf_node", n.Leaf.unmarshal) {
					return false
				}
			case nodeType(typ) == nodeTypeParent && !leafPos:
				n.Parent = new(ParentNode)
				if !d.sub("parent_node", n.Parent.unmarshal) {
					return false
				}
			case leafPos:
				return d.reject("node_type", "%d at a leaf position, want leaf (1)", typ)
			default:
				return d.reject("node_type", "%d at a parent position, want parent (2)", typ)
			}
		}
		t.nodes = append(t.nodes, n)
		// Leaf indices must fit in a uint32.
		return uint64(len(t.nodes)) <= 1<<31 || d.reject("", "more than 2^31 nodes")
	})
	switch {
	case !ok:
		return false
	case len(t.nodes) == 0:
		return d.failAt(start, "ratchet_tree", "no nodes")
	case t.nodes[len(t.nodes)-1].Blank():
		return d.failAt(start, "ratchet_tree", "last node is blank")
	}
	leaves := uint32(1)
	for tm.NodeWidth(leaves) < uint32(len(t.nodes)) {
		leaves *= 2
	}
	t.nodes = append(t.nodes, make([]Node, tm.NodeWidth(leaves)-uint32(len(t.nodes)))...)
	return true
}

// marshal writes the tree without trailing blank nodes.
func (t *RatchetTree) marshal(b *cryptobyte.Builder) {
	end := len(t.nodes)
	for end > 0 && t.nodes[end-1].Blank() {
		end--
	}
	addVector(b, func(b *cryptobyte.Builder) {
		for _, n := range t.nodes[:end] {
			addOptional(b, !n.Blank(), func(b *cryptobyte.Builder) {
				if n.Leaf != nil {
					b.AddUint8(uint8(nodeTypeLeaf))
					n.Leaf.marshal(b)
				} else {
					b.AddUint8(uint8(nodeTypeParent))
					n.Parent.marshal(b)
				}
			})
		}
	})
}

// Marshal returns the encoding of the tree for the ratchet_tree extension,
// with trailing blank nodes removed (RFC 9420, Section 12.4.3.3).
func (t *RatchetTree) Marshal() []byte { return encode(t) }

// clone returns a copy of t that can be changed without changing t.
// LeafNodes are shared: the tree never changes a LeafNode in place, only
// replaces it. Parent nodes, which addLeaf and setParentHashes change, are
// copied.
func (t *RatchetTree) clone() *RatchetTree {
	c := &RatchetTree{nodes: make([]Node, len(t.nodes)), hashes: slices.Clone(t.hashes)}
	for i, n := range t.nodes {
		c.nodes[i] = n
		if n.Parent != nil {
			c.nodes[i].Parent = n.Parent.clone()
		}
	}
	return c
}

// deepClone returns a copy of t that shares nothing with it, for callers
// outside the package.
func (t *RatchetTree) deepClone() *RatchetTree {
	c := &RatchetTree{nodes: make([]Node, len(t.nodes)), hashes: slices.Clone(t.hashes)}
	for i, n := range t.nodes {
		c.nodes[i] = n.clone()
	}
	return c
}

// NumLeaves returns the number of leaves of the full tree, blank ones
// included (the array representation of RFC 9420, Appendix C).
func (t *RatchetTree) NumLeaves() uint32 { return uint32(len(t.nodes)+1) / 2 }

func (t *RatchetTree) n() uint32 { return t.NumLeaves() }

// Leaf returns the LeafNode at leaf index i (node 2i, RFC 9420, Appendix
// C), or nil if it is blank or out of range. The LeafNode belongs to the
// tree and must not be modified.
func (t *RatchetTree) Leaf(i uint32) *LeafNode {
	x := uint64(i) * 2
	if x >= uint64(len(t.nodes)) {
		return nil
	}
	return t.nodes[x].Leaf
}

// Node returns node x (RFC 9420, Appendix C), or a blank node if x is out
// of range. Its contents
// belong to the tree and must not be modified.
func (t *RatchetTree) Node(x uint32) Node {
	if uint64(x) >= uint64(len(t.nodes)) {
		return Node{}
	}
	return t.nodes[x]
}

func (t *RatchetTree) node(x tm.NodeIndex) Node { return t.nodes[x] }

func (t *RatchetTree) leaf(l tm.LeafIndex) *LeafNode { return t.nodes[l.Node()].Leaf }

func (t *RatchetTree) parent(x tm.NodeIndex) *ParentNode { return t.nodes[x].Parent }

func (t *RatchetTree) blank(x tm.NodeIndex) { t.setNode(x, Node{}) }

// Resolution returns the resolution of node x (RFC 9420, Section 4.1.1):
// the non-blank nodes that together cover its subtree, with each parent's
// unmerged leaves after it. It returns nil for a node outside the tree.
func (t *RatchetTree) Resolution(x uint32) []uint32 {
	if uint64(x) >= uint64(len(t.nodes)) {
		return nil
	}
	var out []uint32
	for _, r := range t.resolution(tm.NodeIndex(x)) {
		out = append(out, uint32(r))
	}
	return out
}

func (t *RatchetTree) resolution(x tm.NodeIndex) []tm.NodeIndex {
	return t.appendResolution(nil, x, nil)
}

// appendResolution appends the resolution of x, leaving out the leaves in
// exclude (new members of the current Commit, RFC 9420, Section 7.6).
func (t *RatchetTree) appendResolution(out []tm.NodeIndex, x tm.NodeIndex, exclude []tm.LeafIndex) []tm.NodeIndex {
	n := t.nodes[x]
	switch {
	case n.Leaf != nil:
		if slices.Contains(exclude, tm.NodeIndex(x).Leaf()) {
			return out
		}
		return append(out, x)
	case n.Parent != nil:
		out = append(out, x)
		for _, u := range n.Parent.UnmergedLeaves {
			if !slices.Contains(exclude, tm.LeafIndex(u)) {
				out = append(out, tm.LeafIndex(u).Node())
			}
		}
		return out
	case x.IsLeaf():
		return out
	}
	out = t.appendResolution(out, tm.Left(x), exclude)
	return t.appendResolution(out, tm.Right(x), exclude)
}

// filteredDirectPath returns the direct path of leaf l without the nodes
// whose copath child has an empty resolution (RFC 9420, Section 4.1.2),
// together with those copath children.
func (t *RatchetTree) filteredDirectPath(l tm.LeafIndex) (path, copath []tm.NodeIndex) {
	n := t.n()
	x := l.Node()
	for _, p := range tm.DirectPath(x, n) {
		c := tm.Sibling(x, n)
		if len(t.resolution(c)) > 0 {
			path = append(path, p)
			copath = append(copath, c)
		}
		x = p
	}
	return path, copath
}

// extend doubles the number of leaves, adding a blank right subtree under a
// new blank root (RFC 9420, Section 7.7).
func (t *RatchetTree) extend() {
	t.hash(tm.Root(t.n())) // keep the old subtree's hashes: it does not change
	t.nodes = append(t.nodes, make([]Node, len(t.nodes)+1)...)
	t.hashes = append(t.hashes, make([][]byte, len(t.hashes)+1)...)
}

// truncate removes right halves with only blank leaves, keeping at least
// one leaf (RFC 9420, Sections 7.7 and 12.1.3).
func (t *RatchetTree) truncate() {
	for len(t.nodes) > 1 {
		half := (len(t.nodes) - 1) / 2
		for x := half + 1; x < len(t.nodes); x += 2 {
			if t.nodes[x].Leaf != nil {
				return
			}
		}
		t.nodes = t.nodes[:half]
		if len(t.hashes) > half {
			t.hashes = t.hashes[:half]
		}
	}
}

// addLeaf puts leaf in the leftmost blank leaf, extending the tree if there
// is none, and marks it unmerged in the non-blank parents above it (RFC
// 9420, Section 12.1.1). It returns the leaf's index.
func (t *RatchetTree) addLeaf(leaf *LeafNode) tm.LeafIndex {
	l := tm.LeafIndex(0)
	for ; uint32(l) < t.n(); l++ {
		if t.nodes[l.Node()].Blank() {
			break
		}
	}
	if uint32(l) == t.n() {
		t.extend()
	}
	for _, p := range tm.DirectPath(l.Node(), t.n()) {
		if pn := t.nodes[p].Parent; pn != nil {
			i, _ := slices.BinarySearch(pn.UnmergedLeaves, uint32(l))
			pn.UnmergedLeaves = slices.Insert(pn.UnmergedLeaves, i, uint32(l))
			t.invalidate(p)
		}
	}
	t.setNode(l.Node(), Node{Leaf: leaf})
	return l
}

// blankPath blanks the parents on the direct path of leaf l.
func (t *RatchetTree) blankPath(l tm.LeafIndex) {
	for _, p := range tm.DirectPath(l.Node(), t.n()) {
		t.blank(p)
	}
}

// updateLeaf replaces leaf l and blanks its direct path (RFC 9420, Section
// 12.1.2).
func (t *RatchetTree) updateLeaf(l tm.LeafIndex, leaf *LeafNode) {
	t.setNode(l.Node(), Node{Leaf: leaf})
	t.blankPath(l)
}

// removeLeaf blanks leaf l and its direct path and truncates the tree (RFC
// 9420, Section 12.1.3).
func (t *RatchetTree) removeLeaf(l tm.LeafIndex) {
	t.blank(l.Node())
	t.blankPath(l)
	t.truncate()
}

// members returns the indices of the non-blank leaves.
func (t *RatchetTree) members() []tm.LeafIndex {
	var out []tm.LeafIndex
	for l := tm.LeafIndex(0); uint32(l) < t.n(); l++ {
		if t.leaf(l) != nil {
			out = append(out, l)
		}
	}
	return out
}

// findLeaf returns the index of the leaf equal to leaf, if any.
func (t *RatchetTree) findLeaf(leaf *LeafNode) (tm.LeafIndex, bool) {
	want := encode(leaf)
	for _, l := range t.members() {
		if bytes.Equal(encode(t.leaf(l)), want) {
			return l, true
		}
	}
	return 0, false
}

// ApplyProposal applies an Add, Update or Remove proposal sent by the member
// at leaf sender to the tree alone (RFC 9420, Sections 12.1.1–12.1.3), as
// the tree-operations vectors do. It does not validate the proposal; group
// commits validate the whole list first. Other proposal types do not change
// the tree and are ignored.
func (t *RatchetTree) ApplyProposal(sender uint32, p Proposal) error {
	switch p := p.(type) {
	case *AddProposal:
		t.addLeaf(p.KeyPackage.LeafNode.clone())
	case *UpdateProposal:
		if t.Leaf(sender) == nil {
			return fmt.Errorf("%w: update from blank leaf %d", ErrInvalidProposal, sender)
		}
		t.updateLeaf(tm.LeafIndex(sender), p.LeafNode.clone())
	case *RemoveProposal:
		if t.Leaf(p.Removed) == nil {
			return fmt.Errorf("%w: remove of blank leaf %d", ErrInvalidProposal, p.Removed)
		}
		t.removeLeaf(tm.LeafIndex(p.Removed))
	}
	return nil
}

// leftmostBlank returns the leftmost blank leaf, extending the tree if
// there is none (RFC 9420, Section 12.4.1, for an external joiner).
func (t *RatchetTree) leftmostBlank() tm.LeafIndex {
	for l := tm.LeafIndex(0); uint32(l) < t.n(); l++ {
		if t.nodes[l.Node()].Blank() {
			return l
		}
	}
	l := tm.LeafIndex(t.n())
	t.extend()
	return l
}
