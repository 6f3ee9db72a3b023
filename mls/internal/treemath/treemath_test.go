package treemath

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

func opt(f func() NodeIndex) (out *uint32) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	v := uint32(f())
	return &v
}

// TestVectors runs tree-math.json (RFC 9420, Appendix C).
func TestVectors(t *testing.T) {
	vs, err := vectorfmt.Load[vectorfmt.TreeMath]("../../testdata/tree-math.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) == 0 {
		t.Fatal("no vectors")
	}
	for _, v := range vs {
		if got := NodeWidth(v.NLeaves); got != v.NNodes {
			t.Errorf("NodeWidth(%d) = %d, want %d", v.NLeaves, got, v.NNodes)
		}
		if got := Root(v.NLeaves); uint32(got) != v.Root {
			t.Errorf("Root(%d) = %d, want %d", v.NLeaves, got, v.Root)
		}
		var left, right, parent, sibling []*uint32
		for i := range v.NNodes {
			x := NodeIndex(i)
			left = append(left, opt(func() NodeIndex { return Left(x) }))
			right = append(right, opt(func() NodeIndex { return Right(x) }))
			parent = append(parent, opt(func() NodeIndex { return Parent(x, v.NLeaves) }))
			sibling = append(sibling, opt(func() NodeIndex { return Sibling(x, v.NLeaves) }))
		}
		for _, c := range []struct {
			name      string
			got, want []*uint32
		}{{"left", left, v.Left}, {"right", right, v.Right}, {"parent", parent, v.Parent}, {"sibling", sibling, v.Sibling}} {
			if d := cmp.Diff(c.want, c.got); d != "" {
				t.Errorf("n_leaves=%d %s (-want +got):\n%s", v.NLeaves, c.name, d)
			}
		}
	}
}

func TestPaths(t *testing.T) {
	// The five-member tree of RFC 9420, Section 4.1.2 (8 leaves).
	tests := []struct {
		leaf         LeafIndex
		direct, copa []NodeIndex
	}{
		{0, []NodeIndex{1, 3, 7}, []NodeIndex{2, 5, 11}},
		{5, []NodeIndex{9, 11, 7}, []NodeIndex{8, 13, 3}},
		{6, []NodeIndex{13, 11, 7}, []NodeIndex{14, 9, 3}},
	}
	for _, tt := range tests {
		if d := cmp.Diff(tt.direct, DirectPath(tt.leaf.Node(), 8)); d != "" {
			t.Errorf("DirectPath(%d) (-want +got):\n%s", tt.leaf, d)
		}
		if d := cmp.Diff(tt.copa, Copath(tt.leaf.Node(), 8)); d != "" {
			t.Errorf("Copath(%d) (-want +got):\n%s", tt.leaf, d)
		}
	}
	if got := DirectPath(0, 1); len(got) != 0 {
		t.Errorf("DirectPath(0, 1) = %v, want []", got)
	}
}

func TestCommonAncestorAndLeaves(t *testing.T) {
	// Brute force against the semantic definition.
	const n = 16
	for x := NodeIndex(0); x < NodeIndex(NodeWidth(n)); x++ {
		first, end := Leaves(x)
		for l := LeafIndex(0); l < n; l++ {
			in := l >= first && l < end
			if in != IsAncestor(x, l.Node()) {
				t.Errorf("Leaves(%d) = [%d,%d) but IsAncestor(%d, %d) = %v", x, first, end, x, l.Node(), !in)
			}
		}
		for y := NodeIndex(0); y < NodeIndex(NodeWidth(n)); y++ {
			want := Root(n)
			for _, a := range append([]NodeIndex{x}, DirectPath(x, n)...) {
				if IsAncestor(a, y) && Level(a) < Level(want) {
					want = a
				}
			}
			if got := CommonAncestor(x, y); got != want {
				t.Errorf("CommonAncestor(%d, %d) = %d, want %d", x, y, got, want)
			}
		}
	}
}
