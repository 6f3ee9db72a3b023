package vectors

import (
	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// tree-operations: Add, Update and Remove applied to a ratchet tree (RFC
// 9420, Sections 7.7, 7.8 and 12.1.1–12.1.3).
func init() {
	register(&kind{name: "tree-operations", requires: []string{"tree_before"}, run: decoded(runTreeOperations)})
}

func runTreeOperations(v *vectorfmt.TreeOperations) error {
	tree, err := mls.ParseRatchetTree(v.TreeBefore)
	if err != nil {
		return err
	}
	p, err := mls.ParseProposal(v.Proposal)
	if err != nil {
		return err
	}
	var ck checker
	ck.bytes("tree hash before", tree.TreeHash(), v.TreeHashBefore)
	if ck.fail("ApplyProposal", tree.ApplyProposal(v.ProposalSender, p)) {
		return ck.err()
	}
	ck.bytes("tree after", tree.Marshal(), v.TreeAfter)
	ck.bytes("tree hash after", tree.TreeHash(), v.TreeHashAfter)
	return ck.err()
}
