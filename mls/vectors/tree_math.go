package vectors

import (
	"fmt"

	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// tree-math: array-tree index arithmetic (RFC 9420, Section 4.2 and
// Appendix C).
func init() {
	register(&kind{name: "tree-math", requires: []string{"n_leaves"}, run: decoded(runTreeMath)})
}

// optional calls f, mapping a panic (no such node) to nil.
func optional(f func() tm.NodeIndex) (out *uint32) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	v := uint32(f())
	return &v
}

func runTreeMath(v *vectorfmt.TreeMath) error {
	var ck checker
	if v.NLeaves == 0 || v.NLeaves&(v.NLeaves-1) != 0 {
		return fmt.Errorf("n_leaves %d is not a power of two", v.NLeaves)
	}
	if got := tm.NodeWidth(v.NLeaves); got != v.NNodes {
		ck.errorf("n_nodes = %d, want %d", got, v.NNodes)
	}
	if got := uint32(tm.Root(v.NLeaves)); got != v.Root {
		ck.errorf("root = %d, want %d", got, v.Root)
	}
	arrays := []struct {
		name string
		want []*uint32
		f    func(tm.NodeIndex) tm.NodeIndex
	}{
		{"left", v.Left, tm.Left},
		{"right", v.Right, tm.Right},
		{"parent", v.Parent, func(x tm.NodeIndex) tm.NodeIndex { return tm.Parent(x, v.NLeaves) }},
		{"sibling", v.Sibling, func(x tm.NodeIndex) tm.NodeIndex { return tm.Sibling(x, v.NLeaves) }},
	}
	for _, a := range arrays {
		if uint32(len(a.want)) != v.NNodes {
			ck.errorf("%s has %d entries, want %d", a.name, len(a.want), v.NNodes)
			continue
		}
		for i, want := range a.want {
			x := tm.NodeIndex(i)
			got := optional(func() tm.NodeIndex { return a.f(x) })
			if (got == nil) != (want == nil) || (got != nil && *got != *want) {
				ck.errorf("%s[%d] = %s, want %s", a.name, i, fmtOpt(got), fmtOpt(want))
			}
		}
	}
	return ck.err()
}

func fmtOpt(p *uint32) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}
