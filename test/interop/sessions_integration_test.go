//go:build integration

package interop

import (
	"bytes"
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime/sessions"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/test/interop/tsmls"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// The interop scenarios: Torpor's MLS sessions (package session
// on package mls) and ts-mls 1.6.4, the library of the draft's reference
// implementation, in the same groups. After every step all members agree on
// the epoch, the epoch authenticator, the tree hash, the members and an
// exporter value.

func startPeer(t *testing.T) *tsmls.Peer {
	t.Helper()
	return tsmls.StartT(t, &tsmls.Config{Exporter: exporter})
}

// TestScenario1TSMLSCreates: ts-mls creates a group and adds a Torpor
// agent by a KeyPackage from its pool, with ts-mls defaults (the Commit a
// PrivateMessage, the ratchet tree out of band, 256-byte padding). The
// Welcome reaches the agent the way a sleeping device gets it: as a
// handshake part through the drain's Sessions. Application messages flow
// both ways, carrying Governed Object plaintexts in the reference's form.
func TestScenario1TSMLSCreates(t *testing.T) {
	p := startPeer(t)
	alice := newTS(t, p, "alice")
	bob := newTorpor(t, "bob")

	alice.create(t, []byte("scenario 1"))
	c := alice.commit(t, change{Add: [][]byte{bob.keyPackage(t)}})
	if c.Welcome == nil || c.Tree == nil {
		t.Fatal("ts-mls commit has no Welcome or tree")
	}
	h := a2a.Handshake{InitiatorDID: alice.DID(), Welcome: c.Welcome, RatchetTree: c.Tree}
	bob.update(t, "ApplyHandshake", func(tx *bolt.Tx) error {
		return sessions.Sessions{S: bob.s}.ApplyHandshake(tx, h, alice.DID())
	})
	bob.update(t, "PairGroup", func(tx *bolt.Tx) (err error) { bob.group, err = bob.s.PairGroup(tx, alice.DID()); return err })
	agree(t, "after the join", alice, bob)

	obj := []byte(`{"id":"1","issuerDid":"` + alice.DID().String() + `"}`)
	pt, err := session.Plaintext(obj)
	if err != nil {
		t.Fatal(err)
	}
	msg := alice.encrypt(t, pt)
	var opened []byte
	bob.update(t, "Open", func(tx *bolt.Tx) error {
		op, err := sessions.Sessions{S: bob.s}.Open(tx, a2a.MLSWire{Wire: msg}, alice.DID())
		if err == nil && op.Sender != alice.DID() {
			t.Errorf("sender = %v, want %v", op.Sender, alice.DID())
		}
		opened = op.Plaintext
		return err
	})
	if got, err := session.ObjectOf(opened); err != nil || string(got) != string(obj) {
		t.Fatalf("ObjectOf = %s, %v; want %s", got, err, obj)
	}
	messagesAllWays(t, alice, bob)
	agree(t, "after the messages", alice, bob)
	// bob's pool gave up the KeyPackage the Welcome used.
	bob.update(t, "PoolSize", func(tx *bolt.Tx) error {
		if n, _, _, err := bob.s.PoolSize(tx); err != nil || n != 1 {
			t.Errorf("pool = %d, %v; want 1 of 2 left", n, err)
		}
		return nil
	})
}

// TestScenario1Binding: a ts-mls member whose credential names another
// agent's DID (ts-mls itself does no binding) cannot bring a Torpor agent
// into its group: the Welcome's tree fails the binding check.
func TestScenario1Binding(t *testing.T) {
	p := startPeer(t)
	alice := newTS(t, p, "alice")
	mallory, err := p.NewActor(ctx(), "mallory", seedOf("mallory"), alice.DID().String())
	if err != nil {
		t.Fatal(err)
	}
	bob := newTorpor(t, "bob")
	if _, err := mallory.CreateGroup(ctx(), []byte("forged")); err != nil {
		t.Fatal(err)
	}
	c, err := mallory.Commit(ctx(), tsmls.CommitOptions{Add: []tsmls.Hex{bob.keyPackage(t)}})
	if err != nil {
		t.Fatal(err)
	}
	err = bob.db.Update(func(tx *bolt.Tx) error {
		_, err := bob.s.Join(tx, c.Welcome, c.RatchetTree, session.JoinOptions{Initiator: alice.DID()})
		return err
	})
	if !errors.Is(err, session.ErrBinding) {
		t.Fatalf("Join of mallory's group = %v, want ErrBinding", err)
	}
	t.Log(err)
	// And a KeyPackage of mallory's claiming alice is refused by a Torpor
	// initiator expecting alice.
	kp, err := mallory.KeyPackage(ctx(), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = bob.db.Update(func(tx *bolt.Tx) error {
		_, err := bob.s.EstablishPair(tx, alice.DID(), kp.Bytes)
		return err
	})
	if !errors.Is(err, session.ErrBinding) {
		t.Fatalf("EstablishPair(mallory's KeyPackage) = %v, want ErrBinding", err)
	}
}

// TestScenario2TorporCreates: a Torpor agent establishes a pair session
// (draft Section 6.2) with a ts-mls member from its KeyPackage; the Welcome
// and the ratchet tree go out of band, as in a handshake part.
func TestScenario2TorporCreates(t *testing.T) {
	p := startPeer(t)
	alice := newTorpor(t, "alice")
	bob := newTS(t, p, "bob")
	carol := newTS(t, p, "carol")

	// A KeyPackage of carol's is refused for bob.
	err := alice.db.Update(func(tx *bolt.Tx) error {
		_, err := alice.s.EstablishPair(tx, bob.DID(), carol.keyPackage(t))
		return err
	})
	if !errors.Is(err, session.ErrIdentityMismatch) {
		t.Fatalf("EstablishPair(bob, carol's KeyPackage) = %v, want ErrIdentityMismatch", err)
	}

	var pr *session.Pair
	alice.update(t, "EstablishPair", func(tx *bolt.Tx) (err error) {
		pr, err = alice.s.EstablishPair(tx, bob.DID(), bob.keyPackage(t))
		return err
	})
	part, err := pr.Handshake.Part() // what goes on the wire
	if err != nil {
		t.Fatal(err)
	}
	h, err := a2a.ReadHandshake(part)
	if err != nil {
		t.Fatal(err)
	}
	bob.join(t, h.Welcome, h.RatchetTree, h.InitiatorDID)
	alice.update(t, "Delivered", func(tx *bolt.Tx) error { return alice.s.Delivered(tx, pr.Group) })
	alice.group = pr.Group
	agree(t, "after the join", alice, bob)
	messagesAllWays(t, alice, bob)
	messagesAllWays(t, bob, alice)
	agree(t, "after the messages", alice, bob)
}

// TestScenario3FiveMembers: five members on both stacks, with adds, an
// update, a remove, proposals by reference and commits by each side.
func TestScenario3FiveMembers(t *testing.T) { fiveMembers(t, false) }

// TestScenario4FiveMembersReopened: scenario 3 again, reopening every
// Torpor member's bbolt file between every step: before each operation
// (every message it processes or makes) and after each step.
func TestScenario4FiveMembersReopened(t *testing.T) { fiveMembers(t, true) }

func fiveMembers(t *testing.T, reopen bool) {
	g := newFiveGroup(t, reopen)
	g.grow(t)
	g.changeAndShrink(t)
}

// fiveGroup holds scenario 3's members: three on Torpor (t1, t2, t3) and
// two on ts-mls (s1, s2).
type fiveGroup struct {
	t1, t2, t3 *torpor
	s1, s2     *tsMember
	// reopen: every Torpor member reopens its bbolt file before each
	// operation and after each step.
	reopen bool
}

// newFiveGroup starts the ts-mls peer and makes the five members, none
// in a group yet.
func newFiveGroup(t *testing.T, reopen bool) *fiveGroup {
	t.Helper()
	p := startPeer(t)
	g := &fiveGroup{
		t1: newTorpor(t, "t1"), t2: newTorpor(t, "t2"), t3: newTorpor(t, "t3"),
		s1: newTS(t, p, "s1"), s2: newTS(t, p, "s2"),
		reopen: reopen,
	}
	for _, m := range []*torpor{g.t1, g.t2, g.t3} {
		m.reopenEach = reopen
	}
	return g
}

// step checks that ms agree after the step name and, when reopening,
// reopens every Torpor member and checks again.
func (g *fiveGroup) step(t *testing.T, name string, ms ...member) {
	t.Helper()
	agree(t, name, ms...)
	if g.reopen {
		for _, m := range []*torpor{g.t1, g.t2, g.t3} {
			m.reopen(t)
		}
		agree(t, name+", reopened", ms...)
	}
}

// grow runs steps 1 to 4: the group grows from t1 alone to all five.
func (g *fiveGroup) grow(t *testing.T) {
	t.Helper()
	// 1. t1 (Torpor) creates the group and adds s1 (ts-mls).
	g.t1.create(t, []byte("five members"))
	c := g.t1.commit(t, change{Add: [][]byte{g.s1.keyPackage(t)}})
	g.s1.join(t, c.Welcome, c.Tree, g.t1.DID())
	g.step(t, "t1 adds s1", g.t1, g.s1)

	// 2. s1 (ts-mls) adds t2 and s2 in one Commit (a PrivateMessage, no
	// path: Adds only).
	c = g.s1.commit(t, change{Add: [][]byte{g.t2.keyPackage(t), g.s2.keyPackage(t)}})
	deliver(t, c.Commit, "commit", g.s1, g.t1)
	g.t2.join(t, c.Welcome, c.Tree, g.s1.DID())
	g.s2.join(t, c.Welcome, c.Tree, g.s1.DID())
	g.step(t, "s1 adds t2 and s2", g.t1, g.s1, g.t2, g.s2)

	// 3. t2 (Torpor) proposes an Update of its leaf; s2 (ts-mls) commits
	// it by reference, with a path.
	prop := g.t2.propose(t, proposal{Update: true})
	deliver(t, prop, "proposal", g.t2, g.t1, g.s1, g.s2)
	c = g.s2.commit(t, change{})
	deliver(t, c.Commit, "commit", g.s2, g.t1, g.t2, g.s1)
	g.step(t, "s2 commits t2's update", g.t1, g.s1, g.t2, g.s2)

	// 4. s1 (ts-mls) proposes adding t3; t1 (Torpor) commits the proposal
	// by reference.
	prop = g.s1.propose(t, proposal{Add: g.t3.keyPackage(t)})
	deliver(t, prop, "proposal", g.s1, g.t1, g.t2, g.s2)
	c = g.t1.commit(t, change{})
	deliver(t, c.Commit, "commit", g.t1, g.s1, g.t2, g.s2)
	g.t3.join(t, c.Welcome, c.Tree, g.t1.DID())
	g.step(t, "t1 commits s1's add of t3", g.t1, g.s1, g.t2, g.s2, g.t3)
}

// changeAndShrink runs steps 5 to 8: an update committed with one of its
// own, the removals of s1 and t2, and messages between those left.
func (g *fiveGroup) changeAndShrink(t *testing.T) {
	t.Helper()
	// 5. s2 (ts-mls) proposes an Update; t3 (Torpor) commits it together
	// with an update of its own (a path).
	prop := g.s2.propose(t, proposal{Update: true})
	deliver(t, prop, "proposal", g.s2, g.t1, g.s1, g.t2, g.t3)
	c := g.t3.commit(t, change{Update: true})
	deliver(t, c.Commit, "commit", g.t3, g.t1, g.s1, g.t2, g.s2)
	g.step(t, "t3 commits s2's update and its own", g.t1, g.s1, g.t2, g.s2, g.t3)

	// 6. t1 (Torpor) removes s1 (ts-mls); s1 learns it.
	c = g.t1.commit(t, change{Remove: []did.DID{g.s1.DID()}})
	deliver(t, c.Commit, "commit", g.t1, g.t2, g.s2, g.t3)
	if got := g.s1.process(t, c.Commit); !got.Removed {
		t.Fatalf("s1 after its removal: %+v", got)
	}
	g.step(t, "t1 removes s1", g.t1, g.t2, g.s2, g.t3)

	// 7. t3 (Torpor) proposes removing t2; s2 (ts-mls) commits it; t2
	// learns it and drops the session.
	prop = g.t3.propose(t, proposal{Remove: g.t2.DID()})
	deliver(t, prop, "proposal", g.t3, g.t1, g.t2, g.s2)
	c = g.s2.commit(t, change{})
	deliver(t, c.Commit, "commit", g.s2, g.t1, g.t3)
	if got := g.t2.process(t, c.Commit); !got.Removed {
		t.Fatalf("t2 after its removal: %+v", got)
	}
	g.step(t, "s2 commits t3's removal of t2", g.t1, g.s2, g.t3)

	// 8. Application messages between everyone left.
	messagesAllWays(t, g.t1, g.s2, g.t3)
	g.step(t, "messages", g.t1, g.s2, g.t3)
}

// TestDesignatedCommitterInterop: in a group session whose designated
// committer is a ts-mls member (draft Section 6.3.1), a Torpor member
// refuses Commits by other ts-mls members, as PrivateMessage or
// PublicMessage, even when the envelope claims the committer sent them:
// the MLS-authenticated sender decides, and a refused Commit changes
// nothing. The committer's public Commits (the fan-out of Section 6.3.2)
// are applied.
func TestDesignatedCommitterInterop(t *testing.T) {
	p := startPeer(t)
	alice, carol, dave := newTS(t, p, "alice"), newTS(t, p, "carol"), newTS(t, p, "dave")
	bob := newTorpor(t, "bob")

	alice.create(t, []byte("room"))
	r, err := alice.Commit(ctx(), tsmls.CommitOptions{Add: []tsmls.Hex{bob.keyPackage(t), carol.keyPackage(t), dave.keyPackage(t)}, PublicMessage: true})
	if err != nil {
		t.Fatal(err)
	}
	bob.update(t, "Join", func(tx *bolt.Tx) error {
		in, err := bob.s.Join(tx, r.Welcome, r.RatchetTree, session.JoinOptions{Initiator: alice.DID(), Policy: session.Policy{Committer: alice.DID()}})
		if err == nil {
			bob.group = in.Group
		}
		return err
	})
	carol.join(t, r.Welcome, r.RatchetTree, alice.DID())
	dave.join(t, r.Welcome, r.RatchetTree, alice.DID())
	agree(t, "after the joins", alice, bob, carol, dave)

	for _, tt := range []struct {
		forger *tsMember
		public bool
	}{{carol, false}, {dave, true}} {
		forged, err := tt.forger.Commit(ctx(), tsmls.CommitOptions{PublicMessage: tt.public})
		if err != nil {
			t.Fatal(err)
		}
		before := bob.view(t)
		err = bob.db.Update(func(tx *bolt.Tx) error {
			_, err := sessions.Sessions{S: bob.s}.Open(tx, a2a.MLSWire{Wire: forged.Commit, SenderDID: alice.DID()}, alice.DID())
			return err
		})
		if !errors.Is(err, session.ErrNotCommitter) {
			t.Fatalf("%s's commit (public %v) claiming alice = %v, want ErrNotCommitter", tt.forger.Name(), tt.public, err)
		}
		t.Log(err)
		if after := bob.view(t); after.Epoch != before.Epoch || !bytes.Equal(after.EpochAuthenticator, before.EpochAuthenticator) {
			t.Fatal("bob's group changed after a refused commit")
		}
	}
	// The forgers moved on alone; the committer removes them in a public
	// Commit, which bob applies.
	c, err := alice.Commit(ctx(), tsmls.CommitOptions{Remove: []uint32{alice.leafOf(t, carol.DID()), alice.leafOf(t, dave.DID())}, PublicMessage: true})
	if err != nil {
		t.Fatal(err)
	}
	bob.update(t, "Open", func(tx *bolt.Tx) error {
		op, err := sessions.Sessions{S: bob.s}.Open(tx, a2a.MLSWire{Wire: c.Commit, SenderDID: alice.DID()}, alice.DID())
		if err == nil && !op.Commit {
			t.Error("the committer's commit was not applied as one")
		}
		return err
	})
	agree(t, "after the committer's commit", alice, bob)
	messagesAllWays(t, alice, bob)
}
