package mls

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRandomGroupOperations drives a group through random epochs: members
// propose Adds, Removes and Updates by reference or commit them by value,
// with and without paths, as PublicMessages or PrivateMessages, and every
// member must agree on the new epoch and exchange messages after each
// Commit. Trees with blanks, unmerged leaves, truncation and
// extension all occur.
func TestRandomGroupOperations(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	members := newTestGroup(t, "m0", "m1", "m2")
	next := 3
	for epoch := range 30 {
		committer := members[r.IntN(len(members))]
		others := slices.DeleteFunc(slices.Clone(members), func(c *client) bool { return c == committer })
		opts := &CommitOptions{Public: r.IntN(2) == 0, ForcePath: r.IntN(3) == 0, RatchetTreeInWelcome: r.IntN(2) == 0}
		var joiners []*client
		var kps []*KeyPackage
		var privs []*KeyPackagePrivate
		removed := map[*client]bool{}

		// Proposals by reference from random members.
		for range r.IntN(3) {
			p := members[r.IntN(len(members))]
			var m *MLSMessage
			var err error
			switch op := r.IntN(3); {
			case op == 0 && p != committer:
				m, err = p.g.ProposeUpdate(&SendOptions{Public: r.IntN(2) == 0})
			case op == 1 && len(members)-len(removed) > 2:
				victim := members[r.IntN(len(members))]
				if victim == committer || removed[victim] {
					continue
				}
				removed[victim] = true
				m, err = p.g.Propose(&RemoveProposal{Removed: victim.g.LeafIndex()}, nil)
			default:
				j := newClient(t, fmt.Sprintf("m%d", next))
				next++
				kp, priv := j.keyPackage(t)
				joiners, kps, privs = append(joiners, j), append(kps, kp), append(privs, priv)
				m, err = p.g.Propose(&AddProposal{KeyPackage: *kp}, nil)
			}
			if err != nil {
				t.Fatalf("epoch %d: propose: %v", epoch, err)
			}
			for _, o := range members {
				if o != p {
					if _, err := o.g.ProcessMessage(roundTrip(t, m)); err != nil {
						t.Fatalf("epoch %d: %s processing a proposal: %v", epoch, o.name, err)
					}
				}
			}
		}
		// An Add by value now and then.
		if r.IntN(3) == 0 {
			j := newClient(t, fmt.Sprintf("m%d", next))
			next++
			kp, priv := j.keyPackage(t)
			joiners, kps, privs = append(joiners, j), append(kps, kp), append(privs, priv)
			opts.Proposals = append(opts.Proposals, &AddProposal{KeyPackage: *kp})
		}

		pc := committer.commit(t, opts)
		for _, o := range others {
			res, err := o.g.ProcessMessage(roundTrip(t, pc.Message))
			if err != nil {
				t.Fatalf("epoch %d: %s processing %s's commit: %v", epoch, o.name, committer.name, err)
			}
			if res.Commit.Removed != removed[o] {
				t.Fatalf("epoch %d: %s removed = %v, want %v", epoch, o.name, res.Commit.Removed, removed[o])
			}
		}
		members = slices.DeleteFunc(members, func(c *client) bool { return removed[c] })
		for i, j := range joiners {
			var tree *RatchetTree
			if !opts.RatchetTreeInWelcome {
				tree = committer.g.RatchetTree()
			}
			j.join(t, pc, kps[i], privs[i], tree)
			members = append(members, j)
		}
		sameState(t, members...)
		if err := committer.g.tree.validate(committer.g.ctx.GroupID, committer.g.ctx.Extensions, nil); err != nil {
			t.Fatalf("epoch %d: tree invalid: %v", epoch, err)
		}
		from := members[r.IntN(len(members))]
		m, err := from.g.EncryptApplication([]byte("hi"), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, to := range members {
			if p, err := to.g.ProcessMessage(roundTrip(t, m)); to != from && (err != nil || string(p.ApplicationData) != "hi") {
				t.Fatalf("epoch %d: %s → %s: %v", epoch, from.name, to.name, err)
			}
		}
	}
	t.Logf("%d members after 30 epochs, tree of %d leaves", len(members), members[0].g.tree.NumLeaves())
}
