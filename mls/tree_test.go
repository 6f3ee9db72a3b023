package mls

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// TestTreeValidationVectors runs tree-validation.cs1.json: resolutions and
// tree hashes of every node, parent hashes and leaf signatures (RFC 9420,
// Sections 4.1.1, 7.8, 7.9).
func TestTreeValidationVectors(t *testing.T) {
	cases := vectorCases[vectorfmt.TreeValidation](t, "tree-validation.cs1.json")
	for i, c := range cases {
		tree, err := ParseRatchetTree(c.Tree)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if got, want := len(tree.nodes), len(c.Resolutions); got != want {
			t.Errorf("case %d: %d nodes, want %d", i, got, want)
			continue
		}
		hashes := tree.treeHashes()
		for x := range tree.nodes {
			if got := tree.Resolution(uint32(x)); !slices.Equal(got, c.Resolutions[x]) {
				t.Errorf("case %d: Resolution(%d) = %v, want %v", i, x, got, c.Resolutions[x])
			}
			want := c.TreeHashes[x]
			if got := tree.NodeTreeHash(uint32(x)); !bytes.Equal(got, want) {
				t.Errorf("case %d: NodeTreeHash(%d) = %x, want %x", i, x, got, want)
			}
			if !bytes.Equal(hashes[x], want) {
				t.Errorf("case %d: treeHashes()[%d] = %x, want %x", i, x, hashes[x], want)
			}
		}
		if err := tree.Validate(c.GroupID, nil); err != nil {
			t.Errorf("case %d: Validate: %v", i, err)
		}
		if err := tree.Validate([]byte("another group"), nil); !errors.Is(err, ErrInvalidSignature) && tree.hasGroupBoundLeaf() {
			t.Errorf("case %d: Validate with a wrong group ID = %v, want ErrInvalidSignature", i, err)
		}
		if got := tree.Marshal(); !bytes.Equal(got, c.Tree) {
			t.Errorf("case %d: Marshal differs from the vector", i)
		}
	}
}

func (t *RatchetTree) hasGroupBoundLeaf() bool {
	for _, l := range t.members() {
		if t.leaf(l).Source != LeafNodeSourceKeyPackage {
			return true
		}
	}
	return false
}

// TestTreeValidationTampered checks that Validate notices a changed parent
// node, a changed leaf and broken unmerged-leaf lists.
func TestTreeValidationTampered(t *testing.T) {
	cases := vectorCases[vectorfmt.TreeValidation](t, "tree-validation.cs1.json")
	groupID := cases[len(cases)-1].GroupID
	base, err := ParseRatchetTree(cases[len(cases)-1].Tree)
	if err != nil {
		t.Fatal(err)
	}
	firstParent := func(tr *RatchetTree) *ParentNode {
		for x := 1; x < len(tr.nodes); x += 2 {
			if p := tr.nodes[x].Parent; p != nil {
				return p
			}
		}
		t.Fatal("no parent node")
		return nil
	}
	tests := []struct {
		name   string
		tamper func(tr *RatchetTree)
		want   error
	}{
		{"parent key changed", func(tr *RatchetTree) { firstParent(tr).EncryptionKey[0] ^= 1 }, ErrInvalidTree},
		{"parent hash changed", func(tr *RatchetTree) {
			p := firstParent(tr)
			p.ParentHash = append(bytes.Clone(p.ParentHash), 0)
		}, ErrInvalidTree},
		{"leaf signature", func(tr *RatchetTree) { tr.nodes[0].Leaf.Signature[0] ^= 1 }, ErrInvalidSignature},
		{"duplicate leaf key", func(tr *RatchetTree) {
			tr.nodes[2].Leaf.EncryptionKey = bytes.Clone(tr.nodes[0].Leaf.EncryptionKey)
		}, ErrInvalidTree},
		{"unsorted unmerged leaves", func(tr *RatchetTree) {
			p := firstParent(tr)
			p.UnmergedLeaves = []uint32{1, 0}
		}, ErrInvalidTree},
	}
	if err := base.Validate(groupID, nil); err != nil {
		t.Fatalf("untampered tree: %v", err)
	}
	for _, tt := range tests {
		tr := base.deepClone()
		tt.tamper(tr)
		tr.hashes = nil // tampering bypasses setNode
		if err := tr.Validate(groupID, nil); !errors.Is(err, tt.want) {
			t.Errorf("%s: Validate = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// TestTreeOperationsVectors runs tree-operations.json: Add, Update and
// Remove applied to a tree (RFC 9420, Sections 12.1.1–12.1.3, 7.7).
func TestTreeOperationsVectors(t *testing.T) {
	cases := vectorCases[vectorfmt.TreeOperations](t, "tree-operations.json")
	for i, c := range cases {
		tree, err := ParseRatchetTree(c.TreeBefore)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if got := tree.TreeHash(); !bytes.Equal(got, c.TreeHashBefore) {
			t.Errorf("case %d: tree hash before = %x", i, got)
		}
		p, err := ParseProposal(c.Proposal)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if err := tree.ApplyProposal(c.ProposalSender, p); err != nil {
			t.Fatalf("case %d: ApplyProposal: %v", i, err)
		}
		if got := tree.Marshal(); !bytes.Equal(got, c.TreeAfter) {
			t.Errorf("case %d (%T): tree after differs\n got %x\nwant %s", i, p, got, c.TreeAfter)
		}
		if got := tree.TreeHash(); !bytes.Equal(got, c.TreeHashAfter) {
			t.Errorf("case %d: tree hash after = %x", i, got)
		}
	}
}

func TestTruncateAndExtend(t *testing.T) {
	leaf := func() *LeafNode { return &LeafNode{Source: LeafNodeSourceKeyPackage} }
	tr := newRatchetTree(leaf())
	for range 4 {
		tr.addLeaf(leaf())
	}
	if got := tr.NumLeaves(); got != 8 {
		t.Fatalf("5 members: NumLeaves = %d, want 8", got)
	}
	tr.removeLeaf(4)
	if got := tr.NumLeaves(); got != 4 {
		t.Errorf("after removing leaf 4: NumLeaves = %d, want 4", got)
	}
	tr.removeLeaf(1)
	if got, _ := tr.findLeaf(tr.leaf(0)); got != 0 || tr.NumLeaves() != 4 {
		t.Errorf("after removing leaf 1: NumLeaves = %d, want 4", tr.NumLeaves())
	}
	if l := tr.addLeaf(leaf()); l != 1 {
		t.Errorf("addLeaf filled leaf %d, want the leftmost blank 1", l)
	}
	tr.removeLeaf(3)
	tr.removeLeaf(2)
	tr.removeLeaf(1)
	if got := tr.NumLeaves(); got != 1 {
		t.Errorf("one member left: NumLeaves = %d, want 1", got)
	}
	_ = tm.Root
}
