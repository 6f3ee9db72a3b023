package mls

import (
	"bytes"
	"errors"
	"testing"
)

// errNotSuccessor is what the test Authentication Service returns for a
// credential that may not replace another.
var errNotSuccessor = errors.New("identity changed")

// sameIdentity is a ValidateSuccessor policy: the identity may not change.
func sameIdentity(old, new Credential) error {
	if !bytes.Equal(old.Identity, new.Identity) {
		return errNotSuccessor
	}
	return nil
}

// TestRotationByCommit: a Commit's UpdatePath may carry a new credential
// and signature key; members accept it unless their ValidateSuccessor
// refuses, and then nothing changes.
func TestRotationByCommit(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob", "carol")
	alice, bob, carol := cs[0], cs[1], cs[2]
	bob.g.config.ValidateSuccessor = sameIdentity
	var calls int
	carol.g.config.ValidateSuccessor = func(old, new Credential) error { calls++; return nil }

	newSig := newSigner(t)
	pc, err := alice.g.Commit(&CommitOptions{Rotate: &Rotation{Credential: NewBasicCredential([]byte("mallory")), SignatureKey: newSig}})
	if err != nil {
		t.Fatal(err)
	}
	if pc.Message.PrivateMessage == nil || !bytes.Equal(pc.next.tree.Leaf(0).Credential.Identity, []byte("mallory")) {
		t.Fatal("rotating Commit does not carry the new leaf")
	}
	epoch := bob.g.Epoch()
	_, err = bob.g.ProcessMessage(roundTrip(t, pc.Message))
	if !errors.Is(err, errNotSuccessor) || !errors.Is(err, ErrInvalidLeafNode) {
		t.Fatalf("bob: ProcessMessage(identity-changing Commit) = %v, want errNotSuccessor", err)
	}
	if bob.g.Epoch() != epoch || bob.g.Err() != nil {
		t.Fatalf("bob: refused Commit moved the group to epoch %d (err %v)", bob.g.Epoch(), bob.g.Err())
	}

	process(t, pc.Message, carol)
	if calls != 1 {
		t.Errorf("carol's ValidateSuccessor called %d times, want 1", calls)
	}
	if err := alice.g.MergeCommit(pc); err != nil {
		t.Fatal(err)
	}
	if got := carol.g.Member(0).Credential.Identity; !bytes.Equal(got, []byte("mallory")) {
		t.Errorf("carol sees leaf 0 as %q, want mallory", got)
	}
	sameState(t, alice, carol)
	checkMessaging(t, alice, carol) // alice now signs with the new key
}

// TestRotationByUpdate: an Update may carry a new credential and signature
// key; the proposer signs with the new key once a Commit covers it, and a
// member whose ValidateSuccessor refuses rejects the Commit.
func TestRotationByUpdate(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob", "carol")
	alice, bob, carol := cs[0], cs[1], cs[2]
	carol.g.config.ValidateSuccessor = sameIdentity

	m, err := bob.g.ProposeRotation(Rotation{Credential: NewBasicCredential([]byte("bob 2")), SignatureKey: newSigner(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	process(t, m, alice, carol)
	// The pending new signing key survives a State round trip.
	st, err := bob.g.State()
	if err != nil {
		t.Fatal(err)
	}
	if bob.g, err = RestoreGroup(bob.cfg, st); err != nil {
		t.Fatal(err)
	}

	// carol, committing herself, leaves the Update out.
	pc, err := carol.g.Commit(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := pc.next.tree.Leaf(1).Credential.Identity; !bytes.Equal(got, []byte("bob")) {
		t.Errorf("carol's Commit gave leaf 1 identity %q, want bob (the Update left out)", got)
	}

	pc = alice.commit(t, nil)
	epoch := carol.g.Epoch()
	if _, err := carol.g.ProcessMessage(roundTrip(t, pc.Message)); !errors.Is(err, errNotSuccessor) {
		t.Fatalf("carol: ProcessMessage(Commit of identity-changing Update) = %v, want errNotSuccessor", err)
	}
	if carol.g.Epoch() != epoch {
		t.Fatalf("carol: refused Commit moved the group to epoch %d", carol.g.Epoch())
	}
	process(t, pc.Message, bob)
	if got := alice.g.Member(1).Credential.Identity; !bytes.Equal(got, []byte("bob 2")) {
		t.Errorf("alice sees leaf 1 as %q, want bob 2", got)
	}
	sameState(t, alice, bob)
	checkMessaging(t, alice, bob) // bob now signs with the new key
}
