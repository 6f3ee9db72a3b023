package session

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/mls"
)

// groupSession builds a group session with committer as designated
// committer and the others joined through one Commit, fanned out as draft
// Section 6.3.2 says. It returns the group ID.
func groupSession(t *testing.T, committer *agent, others ...*agent) []byte {
	t.Helper()
	var group []byte
	committer.update(func(tx *bolt.Tx) error {
		in, err := committer.s.Create(tx, nil, Policy{Committer: committer.id()})
		group = in.Group
		return err
	})
	var kps [][]byte
	var ids []did.DID
	for _, o := range others {
		kps, ids = append(kps, o.keyPackage()), append(ids, o.id())
	}
	c := commitAndFanOut(t, committer, group, Change{Add: kps, Expect: ids, Public: true})
	if !slices.Equal(c.Added, ids) || len(c.Existing) != 0 {
		t.Fatalf("added %v, existing %v; want %v and none", c.Added, c.Existing, ids)
	}
	return group
}

// commitAndFanOut commits ch at the committer and delivers it: the Commit
// to the existing members (processed), the Welcome to the new ones
// (joined), checking that all agree afterwards.
func commitAndFanOut(t *testing.T, committer *agent, group []byte, ch Change, all ...*agent) *Committed {
	t.Helper()
	var c *Committed
	committer.update(func(tx *bolt.Tx) (err error) { c, err = committer.s.Commit(tx, group, ch); return err })
	h, hasWelcome := c.Handshake(committer.id())
	w := c.Wire(committer.id())
	for _, a := range registry(t) {
		switch {
		case containsDID(c.Existing, a.id()):
			a.update(func(tx *bolt.Tx) error {
				r, err := a.s.Process(tx, w.Wire, w.SenderDID)
				if err == nil && (r.Kind != KindCommit || r.Sender != committer.id()) {
					t.Errorf("%s: %v from %v, want a commit from %v", a.name, r.Kind, r.Sender, committer.id())
				}
				return err
			})
		case containsDID(c.Added, a.id()) && hasWelcome:
			a.update(func(tx *bolt.Tx) error {
				_, err := a.s.Join(tx, h.Welcome, h.RatchetTree, JoinOptions{Initiator: h.InitiatorDID, Policy: Policy{Committer: h.InitiatorDID}})
				return err
			})
		}
	}
	want := committer.info(group)
	for _, id := range append(c.Existing, c.Added...) {
		got := agentOf(t, id).info(group)
		if got.Epoch != want.Epoch || !bytes.Equal(got.EpochAuthenticator, want.EpochAuthenticator) || !bytes.Equal(got.TreeHash, want.TreeHash) {
			t.Fatalf("%s disagrees with the committer after the commit: epoch %d, want %d", agentOf(t, id).name, got.Epoch, want.Epoch)
		}
	}
	return c
}

// The agents of a test, so the fan-out helpers can find them by DID.
var agents = map[testing.TB]map[did.DID]*agent{}

func register(t testing.TB, as ...*agent) {
	if agents[t] == nil {
		agents[t] = map[did.DID]*agent{}
		t.Cleanup(func() { delete(agents, t) })
	}
	for _, a := range as {
		agents[t][a.id()] = a
	}
}

func registry(t testing.TB) map[did.DID]*agent { return agents[t] }

func agentOf(t testing.TB, id did.DID) *agent {
	a := agents[t][id]
	if a == nil {
		t.Fatalf("no agent %v", id)
	}
	return a
}

func containsDID(ds []did.DID, d did.DID) bool {
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}

func TestGroupSessionFanOut(t *testing.T) {
	alice, bob, carol, dave := newAgent(t, "alice", nil), newAgent(t, "bob", nil), newAgent(t, "carol", nil), newAgent(t, "dave", nil)
	register(t, alice, bob, carol, dave)
	group := groupSession(t, alice, bob, carol)

	c := commitAndFanOut(t, alice, group, Change{Add: [][]byte{dave.keyPackage()}, Public: true})
	if !slices.Equal(c.Existing, []did.DID{bob.id(), carol.id()}) {
		t.Errorf("Existing = %v, want bob and carol", c.Existing)
	}
	if got := dave.info(group).Policy.Committer; got != alice.id() {
		t.Errorf("dave's committer = %v, want %v", got, alice.id())
	}
	// Removing carol: the Commit goes to the remaining members only.
	removal := commitAndFanOut(t, alice, group, Change{Remove: []did.DID{carol.id()}, Public: true})
	if !slices.Equal(removal.Existing, []did.DID{bob.id(), dave.id()}) || !slices.Equal(removal.Removed, []did.DID{carol.id()}) {
		t.Errorf("removal: existing %v removed %v", removal.Existing, removal.Removed)
	}
	// carol need not process it; when she does, her session ends.
	var r *Received
	carol.update(func(tx *bolt.Tx) (err error) { r, err = carol.s.Process(tx, removal.Commit, alice.id()); return err })
	if !r.Removed {
		t.Errorf("carol processing her removal: %+v, want Removed", r)
	}
	carol.update(func(tx *bolt.Tx) error {
		if ok, _ := carol.s.Has(tx, group); ok {
			t.Error("carol still has the group after her removal")
		}
		return nil
	})
	for _, from := range []*agent{alice, bob, dave} {
		for _, to := range []*agent{alice, bob, dave} {
			if from != to {
				if r := send(t, from, to, group, []byte(from.name)); r.Sender != from.id() {
					t.Errorf("%s → %s: sender %v", from.name, to.name, r.Sender)
				}
			}
		}
	}
}

// notCommitter checks that a, not the group's committer, may not commit.
func notCommitter(t *testing.T, a *agent, group []byte) {
	t.Helper()
	err := a.try(func(tx *bolt.Tx) error {
		_, err := a.s.Commit(tx, group, Change{Update: true})
		return err
	})
	if !errors.Is(err, ErrNotCommitter) {
		t.Fatalf("%s.Commit = %v, want ErrNotCommitter", a.name, err)
	}
}

// TestDesignatedCommitter: only the committer's Commits are accepted,
// judged by the MLS-authenticated sender and not only by the envelope
// (draft Sections 6.3.1 and 7.5).
func TestDesignatedCommitter(t *testing.T) {
	alice, bob, carol := newAgent(t, "alice", nil), newAgent(t, "bob", nil), newAgent(t, "carol", nil)
	register(t, alice, bob, carol)
	group := groupSession(t, alice, bob, carol)
	notCommitter(t, bob, group)
	// bob, misbehaving, commits with package mls directly.
	forge := func(public bool) []byte {
		pc, err := bob.mlsGroup(group).Commit(&mls.CommitOptions{ForcePath: true, Public: public})
		if err != nil {
			t.Fatal(err)
		}
		return marshal(t, pc.Message)
	}
	genuine := func() []byte {
		var c *Committed
		alice.update(func(tx *bolt.Tx) (err error) {
			c, err = alice.s.Commit(tx, group, Change{Update: true, Public: true})
			return err
		})
		return c.Commit
	}
	tests := []struct {
		name    string
		msg     []byte
		claimed did.DID
	}{
		{"private commit by bob, no claim", forge(false), did.DID{}},
		{"private commit by bob, claiming alice", forge(false), alice.id()},
		{"public commit by bob, claiming alice", forge(true), alice.id()},
		{"public commit by bob, no claim", forge(true), did.DID{}},
		{"alice's commit, envelope names bob", genuine(), bob.id()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := carol.snapshot()
			err := carol.try(func(tx *bolt.Tx) error { _, err := carol.s.Process(tx, tt.msg, tt.claimed); return err })
			if !errors.Is(err, ErrNotCommitter) {
				t.Fatalf("Process = %v, want ErrNotCommitter", err)
			}
			if diff := cmp.Diff(before, carol.snapshot()); diff != "" {
				t.Errorf("state changed:\n%s", diff)
			}
		})
	}
	// The last genuine Commit is accepted with a truthful (or no) claim.
	msg := tests[len(tests)-1].msg
	var r *Received
	carol.update(func(tx *bolt.Tx) (err error) { r, err = carol.s.Process(tx, msg, alice.id()); return err })
	if r.Kind != KindCommit || r.Sender != alice.id() || r.Epoch != alice.info(group).Epoch {
		t.Errorf("genuine commit: %+v", r)
	}
	bob.update(func(tx *bolt.Tx) error { _, err := bob.s.Process(tx, msg, did.DID{}); return err })
	othersPropose(t, group, alice, bob, carol)
}

// othersPropose: proposals from members other than the committer are
// fine: bob proposes an Update, which alice commits.
func othersPropose(t *testing.T, group []byte, alice, bob, carol *agent) {
	t.Helper()
	var prop []byte
	bob.update(func(tx *bolt.Tx) (err error) {
		prop, err = bob.s.Propose(tx, group, Proposal{Update: true}, false)
		return err
	})
	for _, a := range []*agent{alice, carol} {
		a.update(func(tx *bolt.Tx) error {
			r, err := a.s.Process(tx, prop, did.DID{})
			if err == nil && (r.Kind != KindProposal || r.Sender != bob.id()) {
				t.Errorf("%s: %v from %v, want bob's proposal", a.name, r.Kind, r.Sender)
			}
			return err
		})
	}
	commitAndFanOut(t, alice, group, Change{})
}

func TestMessageEpochs(t *testing.T) {
	alice, bob, carol := newAgent(t, "alice", nil), newAgent(t, "bob", nil), newAgent(t, "carol", nil)
	register(t, alice, bob, carol)
	group := groupSession(t, alice, bob, carol)
	var old []byte
	alice.update(func(tx *bolt.Tx) (err error) { old, err = alice.s.Encrypt(tx, group, []byte("old")); return err })
	var c *Committed
	alice.update(func(tx *bolt.Tx) (err error) {
		c, err = alice.s.Commit(tx, group, Change{Update: true, Public: true})
		return err
	})
	var next []byte
	alice.update(func(tx *bolt.Tx) (err error) { next, err = alice.s.Encrypt(tx, group, []byte("new")); return err })

	// bob gets the new epoch's message before the Commit: kept for later.
	err := bob.try(func(tx *bolt.Tx) error { _, err := bob.s.Process(tx, next, did.DID{}); return err })
	if !errors.Is(err, ErrFutureEpoch) || !Deferred(err) {
		t.Fatalf("future message: %v, want a deferred ErrFutureEpoch", err)
	}
	// An unknown group is deferred too (its Welcome may come later).
	other := newAgent(t, "other", nil)
	og := pair(t, other, newAgent(t, "other2", nil))
	var m []byte
	other.update(func(tx *bolt.Tx) (err error) { m, err = other.s.Encrypt(tx, og, []byte("x")); return err })
	err = bob.try(func(tx *bolt.Tx) error { _, err := bob.s.Process(tx, m, did.DID{}); return err })
	if !errors.Is(err, ErrNoSession) || !Deferred(err) {
		t.Fatalf("unknown group: %v, want a deferred ErrNoSession", err)
	}
	for _, m := range [][]byte{old, c.Commit, next} {
		bob.update(func(tx *bolt.Tx) error { _, err := bob.s.Process(tx, m, did.DID{}); return err })
	}
	// The Commit again is stale.
	err = bob.try(func(tx *bolt.Tx) error { _, err := bob.s.Process(tx, c.Commit, did.DID{}); return err })
	if !errors.Is(err, ErrStaleEpoch) || Deferred(err) {
		t.Fatalf("stale commit: %v, want ErrStaleEpoch", err)
	}
}

// TestLateApplicationMessage: a device that drains its queue after a
// Commit still reads an application message sent in the epoch before it
// (RFC 9420, Section 15.3), and its sender is the member that signed it in
// that epoch, even when the Commit removed that member; two epochs back,
// the keys are gone.
func TestLateApplicationMessage(t *testing.T) {
	alice, bob, carol := newAgent(t, "alice", nil), newAgent(t, "bob", nil), newAgent(t, "carol", nil)
	register(t, alice, bob, carol)
	group := groupSession(t, alice, bob, carol)
	var late, older []byte
	bob.update(func(tx *bolt.Tx) (err error) {
		older, err = bob.s.Encrypt(tx, group, []byte("two epochs ago"))
		return err
	})
	commitAndFanOut(t, alice, group, Change{Update: true})
	bob.update(func(tx *bolt.Tx) (err error) {
		late, err = bob.s.Encrypt(tx, group, []byte("before bob's removal"))
		return err
	})
	c := commitAndFanOut(t, alice, group, Change{Remove: []did.DID{bob.id()}}, carol)
	if c == nil {
		t.Fatal("no commit")
	}
	var r *Received
	carol.update(func(tx *bolt.Tx) (err error) { r, err = carol.s.Process(tx, late, did.DID{}); return err })
	if r.Kind != KindApplication || r.Sender != bob.id() || string(r.Plaintext) != "before bob's removal" {
		t.Errorf("late message = %v %q from %v, want bob's application message", r.Kind, r.Plaintext, r.Sender)
	}
	// Its key is deleted (Section 9.2): the same message again is refused.
	if err := carol.try(func(tx *bolt.Tx) error { _, err := carol.s.Process(tx, late, did.DID{}); return err }); err == nil {
		t.Error("a late message was accepted twice")
	}
	err := carol.try(func(tx *bolt.Tx) error { _, err := carol.s.Process(tx, older, did.DID{}); return err })
	if !errors.Is(err, ErrStaleEpoch) || Deferred(err) {
		t.Errorf("message two epochs old: %v, want ErrStaleEpoch", err)
	}
}
