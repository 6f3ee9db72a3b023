package vectors

import (
	"github.com/torpor-dev/torpor/mls"
)

// tree-operations: Add, Update and Remove applied to a ratchet tree (RFC
// 9420, Sections 7.7, 7.8 and 12.1.1–12.1.3).
func init() {
	register(&kind{name: "tree-operations", requires: []string{"tree_before"}, run: runTreeOperations})
}

func runTreeOperations(c fields) error {
	var v struct {
		CipherSuite    uint16   `json:"cipher_suite"`
		TreeBefore     hexBytes `json:"tree_before"`
		Proposal       hexBytes `json:"proposal"`
		ProposalSender uint32   `json:"proposal_sender"`
		TreeHashBefore hexBytes `json:"tree_hash_before"`
		TreeAfter      hexBytes `json:"tree_after"`
		TreeHashAfter  hexBytes `json:"tree_hash_after"`
	}
	if err := decode(c, &v); err != nil {
		return err
	}
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
