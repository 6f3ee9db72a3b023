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
	x := &randomRun{t: t, r: rand.New(rand.NewPCG(7, 9)), members: newTestGroup(t, "m0", "m1", "m2"), next: 3}
	for epoch := range 30 {
		x.epoch(epoch)
	}
	t.Logf("%d members after 30 epochs, tree of %d leaves", len(x.members), x.members[0].g.tree.NumLeaves())
}

// randomRun is the state of TestRandomGroupOperations.
type randomRun struct {
	t       *testing.T
	r       *rand.Rand
	members []*client
	next    int // number of the next new client

	// Of the current epoch.
	committer *client
	joiners   []*client
	kps       []*KeyPackage
	privs     []*KeyPackagePrivate
	removed   map[*client]bool
}

// epoch runs one random epoch and checks that all members agree after it.
func (x *randomRun) epoch(epoch int) {
	t, r := x.t, x.r
	x.committer = x.members[r.IntN(len(x.members))]
	others := slices.DeleteFunc(slices.Clone(x.members), func(c *client) bool { return c == x.committer })
	opts := &CommitOptions{Public: r.IntN(2) == 0, ForcePath: r.IntN(3) == 0, RatchetTreeInWelcome: r.IntN(2) == 0}
	x.joiners, x.kps, x.privs, x.removed = nil, nil, nil, map[*client]bool{}
	for range r.IntN(3) {
		x.propose(epoch)
	}
	// An Add by value now and then.
	if r.IntN(3) == 0 {
		opts.Proposals = append(opts.Proposals, &AddProposal{KeyPackage: *x.newJoiner()})
	}
	pc := x.committer.commit(t, opts)
	for _, o := range others {
		res, err := o.g.ProcessMessage(roundTrip(t, pc.Message))
		if err != nil {
			t.Fatalf("epoch %d: %s processing %s's commit: %v", epoch, o.name, x.committer.name, err)
		}
		if res.Commit.Removed != x.removed[o] {
			t.Fatalf("epoch %d: %s removed = %v, want %v", epoch, o.name, res.Commit.Removed, x.removed[o])
		}
	}
	x.members = slices.DeleteFunc(x.members, func(c *client) bool { return x.removed[c] })
	for i, j := range x.joiners {
		var tree *RatchetTree
		if !opts.RatchetTreeInWelcome {
			tree = x.committer.g.RatchetTree()
		}
		j.join(t, pc, x.kps[i], x.privs[i], tree)
		x.members = append(x.members, j)
	}
	x.check(epoch)
}

// newJoiner makes a new client, to be added in this epoch, and returns its
// KeyPackage.
func (x *randomRun) newJoiner() *KeyPackage {
	j := newClient(x.t, fmt.Sprintf("m%d", x.next))
	x.next++
	kp, priv := j.keyPackage(x.t)
	x.joiners, x.kps, x.privs = append(x.joiners, j), append(x.kps, kp), append(x.privs, priv)
	return kp
}

// propose has a random member propose an Update, a Remove or an Add, which
// all other members process.
func (x *randomRun) propose(epoch int) {
	t, r := x.t, x.r
	p := x.members[r.IntN(len(x.members))]
	var m *MLSMessage
	var err error
	switch op := r.IntN(3); {
	case op == 0 && p != x.committer:
		m, err = p.g.ProposeUpdate(&SendOptions{Public: r.IntN(2) == 0})
	case op == 1 && len(x.members)-len(x.removed) > 2:
		victim := x.members[r.IntN(len(x.members))]
		if victim == x.committer || x.removed[victim] {
			return
		}
		x.removed[victim] = true
		m, err = p.g.Propose(&RemoveProposal{Removed: victim.g.LeafIndex()}, nil)
	default:
		m, err = p.g.Propose(&AddProposal{KeyPackage: *x.newJoiner()}, nil)
	}
	if err != nil {
		t.Fatalf("epoch %d: propose: %v", epoch, err)
	}
	for _, o := range x.members {
		if o != p {
			if _, err := o.g.ProcessMessage(roundTrip(t, m)); err != nil {
				t.Fatalf("epoch %d: %s processing a proposal: %v", epoch, o.name, err)
			}
		}
	}
}

// check compares all members' state, validates the tree and sends one
// application message from a random member to all.
func (x *randomRun) check(epoch int) {
	t := x.t
	sameState(t, x.members...)
	if err := x.committer.g.tree.validate(x.committer.g.ctx.GroupID, x.committer.g.ctx.Extensions, nil); err != nil {
		t.Fatalf("epoch %d: tree invalid: %v", epoch, err)
	}
	from := x.members[x.r.IntN(len(x.members))]
	m, err := from.g.EncryptApplication([]byte("hi"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range x.members {
		if p, err := to.g.ProcessMessage(roundTrip(t, m)); to != from && (err != nil || string(p.ApplicationData) != "hi") {
			t.Fatalf("epoch %d: %s → %s: %v", epoch, from.name, to.name, err)
		}
	}
}
