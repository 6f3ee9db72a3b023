package vectors

import (
	"fmt"
	"slices"

	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// tree-validation: resolutions, tree hashes, parent hashes and leaf
// signatures (RFC 9420, Sections 4.1.1, 7.8, 7.9 and 7.3).
func init() {
	register(&kind{name: "tree-validation", requires: []string{"resolutions"}, run: decoded(runTreeValidation)})
}

func runTreeValidation(v *vectorfmt.TreeValidation) error {
	tree, err := mls.ParseRatchetTree(v.Tree)
	if err != nil {
		return err
	}
	var ck checker
	width := 2*tree.NumLeaves() - 1
	if int(width) != len(v.Resolutions) || int(width) != len(v.TreeHashes) {
		return fmt.Errorf("tree has %d nodes; vector lists %d resolutions and %d hashes", width, len(v.Resolutions), len(v.TreeHashes))
	}
	for x := range width {
		if got := tree.Resolution(x); !slices.Equal(got, v.Resolutions[x]) {
			ck.errorf("resolution(%d) = %v, want %v", x, got, v.Resolutions[x])
		}
		ck.bytes(fmt.Sprintf("tree hash(%d)", x), tree.NodeTreeHash(x), v.TreeHashes[x])
	}
	ck.fail("VerifyParentHashes", tree.VerifyParentHashes())
	ck.fail("Validate", tree.Validate(v.GroupID, nil))
	return ck.err()
}
