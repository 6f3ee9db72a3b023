package session

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/mls"
)

// forgedKeyPackage returns a KeyPackage whose credential claims claim but
// whose signature key is signer's: what an attacker who can publish
// KeyPackages would send (draft Section 4.3, vector 060).
func forgedKeyPackage(t testing.TB, claim did.DID, signer *agent) []byte {
	t.Helper()
	kp, _, err := mls.NewKeyPackage(&mls.Config{}, NewCredential(claim), signer.key.Ed25519())
	if err != nil {
		t.Fatal(err)
	}
	return marshal(t, &mls.MLSMessage{Version: mls.ProtocolMLS10, WireFormat: mls.WireFormatKeyPackage, KeyPackage: kp})
}

func TestCheckCredential(t *testing.T) {
	alice, mallory := newAgent(t, "alice", nil), newAgent(t, "mallory", nil)
	aliceKey := []byte(alice.key.Public())
	tests := []struct {
		name string
		cred mls.Credential
		key  []byte
		want string // substring of the error; "" for success
	}{
		{"bound", NewCredential(alice.id()), aliceKey, ""},
		{"another agent's DID", NewCredential(alice.id()), mallory.key.Public(), "is not the key inside the DID"},
		{"not basic", mls.Credential{Type: mls.CredentialTypeX509, Certificates: [][]byte{{1}}}, aliceKey, "not basic"},
		{"not UTF-8", mls.NewBasicCredential([]byte{0xff, 0xfe}), aliceKey, "not UTF-8"},
		{"not a did:key", mls.NewBasicCredential([]byte("alice@example")), aliceKey, "not an Ed25519 did:key"},
		{"short key", NewCredential(alice.id()), aliceKey[:31], "is not the key inside the DID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := CheckCredential(tt.cred, tt.key)
			if tt.want == "" {
				if err != nil || id != alice.id() {
					t.Fatalf("CheckCredential = %v, %v; want %v", id, err, alice.id())
				}
				return
			}
			var be *BindingError
			if !errors.As(err, &be) || !errors.Is(err, ErrBinding) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CheckCredential = %v, want a *BindingError containing %q", err, tt.want)
			}
		})
	}
	_, err := CheckCredential(NewCredential(alice.id()), mallory.key.Public())
	if !strings.Contains(err.Error(), alice.id().String()) {
		t.Errorf("error %q does not name the DID", err)
	}
}

// groupOf has alice create a group session and add bob; it returns the
// group ID.
func groupOf(t *testing.T, alice, bob *agent) []byte {
	t.Helper()
	group := alice.create()
	var c *Committed
	alice.update(func(tx *bolt.Tx) (err error) {
		c, err = alice.s.Commit(tx, group, Change{Add: [][]byte{bob.keyPackage()}})
		return err
	})
	bob.update(func(tx *bolt.Tx) error {
		_, err := bob.s.Join(tx, c.Welcome, c.RatchetTree, JoinOptions{})
		return err
	})
	return group
}

// refusedUnchanged runs f in a transaction of a, which must fail with
// ErrBinding and leave a's state as it was.
func refusedUnchanged(t *testing.T, a *agent, what string, f func(tx *bolt.Tx) error) error {
	t.Helper()
	before := a.snapshot()
	err := a.try(f)
	if !errors.Is(err, ErrBinding) {
		t.Fatalf("%s = %v, want ErrBinding", what, err)
	}
	if diff := cmp.Diff(before, a.snapshot()); diff != "" {
		t.Errorf("%s changed the state:\n%s", what, diff)
	}
	return err
}

// TestBindingOnAdd: a KeyPackage claiming another agent's DID is refused
// before anything changes, whether this agent commits it, a member proposes
// it, or another member's Commit carries it.
func TestBindingOnAdd(t *testing.T) {
	alice, bob, mallory := newAgent(t, "alice", nil), newAgent(t, "bob", nil), newAgent(t, "mallory", nil)
	group := groupOf(t, alice, bob)
	forged := forgedKeyPackage(t, bob.id(), mallory) // claims bob, signed by mallory
	t.Run("commit", func(t *testing.T) {
		err := refusedUnchanged(t, alice, "Commit(Add forged)", func(tx *bolt.Tx) error {
			_, err := alice.s.Commit(tx, group, Change{Add: [][]byte{forged}})
			return err
		})
		if !strings.Contains(err.Error(), bob.id().String()) {
			t.Fatalf("Commit(Add forged) = %v, want ErrBinding naming %v", err, bob.id())
		}
	})
	kp, err := ParseKeyPackage(forged)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("received proposal", func(t *testing.T) {
		m, err := bob.mlsGroup(group).Propose(&mls.AddProposal{KeyPackage: *kp}, nil)
		if err != nil {
			t.Fatal(err)
		}
		refusedUnchanged(t, alice, "Process(Add proposal of forged)", func(tx *bolt.Tx) error {
			_, err := alice.s.Process(tx, marshal(t, m), did.DID{})
			return err
		})
	})
	t.Run("received commit", func(t *testing.T) {
		g := bob.mlsGroup(group) // bob's raw group, without the binding check
		pc, err := g.Commit(&mls.CommitOptions{Proposals: []mls.Proposal{&mls.AddProposal{KeyPackage: *kp}}})
		if err != nil {
			t.Fatal(err)
		}
		refusedUnchanged(t, alice, "Process(Commit adding forged)", func(tx *bolt.Tx) error {
			_, err := alice.s.Process(tx, marshal(t, pc.Message), did.DID{})
			return err
		})
	})
}

// TestBindingOnWelcome: a Welcome whose tree holds a leaf that claims a DID
// it does not hold is refused; the KeyPackage stays in the pool and no
// group is stored.
func TestBindingOnWelcome(t *testing.T) {
	alice, bob, mallory := newAgent(t, "alice", nil), newAgent(t, "bob", nil), newAgent(t, "mallory", nil)
	// mallory creates a group claiming to be alice, with package mls alone.
	g, err := mls.NewGroup(&mls.Config{}, []byte("forged"), NewCredential(alice.id()), mallory.key.Ed25519(), nil)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ParseKeyPackage(bob.keyPackage())
	if err != nil {
		t.Fatal(err)
	}
	pc, err := g.Commit(&mls.CommitOptions{Proposals: []mls.Proposal{&mls.AddProposal{KeyPackage: *kp}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.MergeCommit(pc); err != nil {
		t.Fatal(err)
	}
	before := bob.snapshot()
	err = bob.try(func(tx *bolt.Tx) error {
		_, err := bob.s.Join(tx, marshal(t, pc.Welcome), g.RatchetTree().Marshal(), JoinOptions{Initiator: alice.id()})
		return err
	})
	if !errors.Is(err, ErrBinding) || !strings.Contains(err.Error(), alice.id().String()) {
		t.Fatalf("Join = %v, want ErrBinding naming %v", err, alice.id())
	}
	if diff := cmp.Diff(before, bob.snapshot()); diff != "" {
		t.Errorf("state changed:\n%s", diff)
	}
}

// TestBindingOnExternalJoin: members refuse an external Commit whose new
// leaf claims a DID it does not hold, and an agent refuses to join from a
// GroupInfo whose tree holds such a leaf.
func TestBindingOnExternalJoin(t *testing.T) {
	alice, bob, mallory := newAgent(t, "alice", nil), newAgent(t, "bob", nil), newAgent(t, "mallory", nil)
	group := alice.create()
	var gi []byte
	alice.update(func(tx *bolt.Tx) (err error) { gi, err = alice.s.GroupInfo(tx, group, true); return err })
	m, err := mls.ParseMLSMessage(gi)
	if err != nil {
		t.Fatal(err)
	}
	_, commit, err := mls.JoinExternal(&mls.Config{}, m.GroupInfo, NewCredential(bob.id()), mallory.key.Ed25519(), nil)
	if err != nil {
		t.Fatal(err)
	}
	before := alice.snapshot()
	err = alice.try(func(tx *bolt.Tx) error { _, err := alice.s.Process(tx, marshal(t, commit), did.DID{}); return err })
	if !errors.Is(err, ErrBinding) {
		t.Fatalf("Process(forged external Commit) = %v, want ErrBinding", err)
	}
	if diff := cmp.Diff(before, alice.snapshot()); diff != "" {
		t.Errorf("state changed:\n%s", diff)
	}

	// A genuine external join works, and the members learn who joined.
	var xc []byte
	bob.update(func(tx *bolt.Tx) (err error) { xc, _, err = bob.s.JoinExternal(tx, gi, nil, JoinOptions{}); return err })
	var r *Received
	alice.update(func(tx *bolt.Tx) (err error) { r, err = alice.s.Process(tx, xc, did.DID{}); return err })
	if r.Kind != KindCommit || r.Sender != bob.id() {
		t.Errorf("external join seen as %v from %v, want a commit from %v", r.Kind, r.Sender, bob.id())
	}

	// A GroupInfo of a group whose tree holds a forged leaf.
	fg, err := mls.NewGroup(&mls.Config{}, []byte("forged"), NewCredential(alice.id()), mallory.key.Ed25519(), nil)
	if err != nil {
		t.Fatal(err)
	}
	fgi, err := fg.GroupInfo(mls.GroupInfoOptions{RatchetTree: true, ExternalPub: true})
	if err != nil {
		t.Fatal(err)
	}
	err = bob.try(func(tx *bolt.Tx) error {
		_, _, err := bob.s.JoinExternal(tx, marshal(t, &mls.MLSMessage{Version: mls.ProtocolMLS10, WireFormat: mls.WireFormatGroupInfo, GroupInfo: fgi}), nil, JoinOptions{})
		return err
	})
	if !errors.Is(err, ErrBinding) {
		t.Fatalf("JoinExternal(forged tree) = %v, want ErrBinding", err)
	}
}

func TestCheckKeyPackage(t *testing.T) {
	alice, mallory := newAgent(t, "alice", nil), newAgent(t, "mallory", nil)
	cfg := alice.s.mlsConfig()
	good, err := ParseKeyPackage(alice.keyPackage())
	if err != nil {
		t.Fatal(err)
	}
	forged, err := ParseKeyPackage(forgedKeyPackage(t, alice.id(), mallory))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		kp   *mls.KeyPackage
		want did.DID
		err  error
	}{
		{"expected agent", good, alice.id(), nil},
		{"any agent", good, did.DID{}, nil},
		{"another agent", good, mallory.id(), ErrIdentityMismatch},
		{"forged", forged, did.DID{}, ErrBinding},
		{"forged, expected", forged, alice.id(), ErrBinding},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := CheckKeyPackage(cfg, tt.kp, tt.want)
			if !errors.Is(err, tt.err) || (err == nil && id != alice.id()) {
				t.Errorf("CheckKeyPackage = %v, %v; want %v", id, err, tt.err)
			}
		})
	}
	// A KeyPackage that is bound but badly signed.
	bad := *good
	bad.Signature = append([]byte(nil), good.Signature...)
	bad.Signature[0] ^= 1
	if _, err := CheckKeyPackage(cfg, &bad, alice.id()); !errors.Is(err, mls.ErrInvalidSignature) {
		t.Errorf("CheckKeyPackage(bad signature) = %v, want mls.ErrInvalidSignature", err)
	}
}

// memberGroup returns a group alice created and the others joined, with
// no designated committer (so that any member may commit).
func memberGroup(t *testing.T, alice *agent, others ...*agent) []byte {
	t.Helper()
	group := alice.create()
	var kps [][]byte
	for _, o := range others {
		kps = append(kps, o.keyPackage())
	}
	var c *Committed
	alice.update(func(tx *bolt.Tx) (err error) {
		c, err = alice.s.Commit(tx, group, Change{Add: kps})
		return err
	})
	for _, o := range others {
		o.update(func(tx *bolt.Tx) error {
			_, err := o.s.Join(tx, c.Welcome, c.RatchetTree, JoinOptions{})
			return err
		})
	}
	return group
}

// forgedLeaves are the new leaves a member might try to take in an Update
// or an UpdatePath: claim is the DID its credential names, signer the
// agent whose key signs it.
func forgedLeaves(bob, mallory *agent) []struct {
	name          string
	claim, signer *agent
} {
	return []struct {
		name          string
		claim, signer *agent
	}{
		{"credential not bound to the key", bob, mallory}, // claims bob, mallory's key
		{"identity changed", mallory, mallory},            // a bound credential, but mallory's
	}
}

// TestBindingOnUpdate: an Update proposal whose LeafNode is not bound to
// its credential, or names another DID than its sender's, is refused on
// arrival and so never cached: a Commit covering it is refused too, and
// nothing is stored.
func TestBindingOnUpdate(t *testing.T) {
	alice, bob, carol := newAgent(t, "alice", nil), newAgent(t, "bob", nil), newAgent(t, "carol", nil)
	mallory := newAgent(t, "mallory", nil)
	group := memberGroup(t, alice, bob, carol)
	for _, tt := range forgedLeaves(bob, mallory) {
		rot := mls.Rotation{Credential: NewCredential(tt.claim.id()), SignatureKey: tt.signer.key.Ed25519()}
		t.Run(tt.name+"/proposal", func(t *testing.T) {
			g := bob.mlsGroup(group) // bob's raw group, without the binding check
			m, err := g.ProposeRotation(rot, nil)
			if err != nil {
				t.Fatal(err)
			}
			before := carol.snapshot()
			err = carol.try(func(tx *bolt.Tx) error { _, err := carol.s.Process(tx, marshal(t, m), did.DID{}); return err })
			if !errors.Is(err, ErrBinding) || !strings.Contains(err.Error(), tt.claim.id().String()) {
				t.Fatalf("Process(forged Update) = %v, want ErrBinding naming %v", err, tt.claim.id())
			}
			if diff := cmp.Diff(before, carol.snapshot()); diff != "" {
				t.Errorf("state changed:\n%s", diff)
			}
		})
		t.Run(tt.name+"/committed", func(t *testing.T) {
			// alice's raw group (without the checks) caches the Update and
			// commits it by reference; carol refused it, so she refuses
			// the Commit.
			bg, ag := bob.mlsGroup(group), alice.mlsGroup(group)
			m, err := bg.ProposeRotation(rot, nil)
			if err != nil {
				t.Fatal(err)
			}
			carol.try(func(tx *bolt.Tx) error { _, err := carol.s.Process(tx, marshal(t, m), did.DID{}); return err })
			if _, err := ag.ProcessMessage(m); err != nil {
				t.Fatal(err)
			}
			pc, err := ag.Commit(nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := ag.MergeCommit(pc); err != nil {
				t.Fatal(err)
			}
			if got := ag.Member(bg.LeafIndex()).Credential.Identity; string(got) != tt.claim.id().String() {
				t.Fatalf("the Commit gave bob's leaf identity %q, want the forged %v", got, tt.claim.id())
			}
			before := carol.snapshot()
			err = carol.try(func(tx *bolt.Tx) error { _, err := carol.s.Process(tx, marshal(t, pc.Message), did.DID{}); return err })
			if !errors.Is(err, mls.ErrUnknownProposal) {
				t.Fatalf("Process(Commit of forged Update) = %v, want mls.ErrUnknownProposal", err)
			}
			if diff := cmp.Diff(before, carol.snapshot()); diff != "" {
				t.Errorf("state changed:\n%s", diff)
			}
		})
	}
}

// TestBindingOnUpdatePath: a Commit whose UpdatePath LeafNode is not bound
// to its credential, or names another DID than the committer's, is
// refused, and nothing is stored.
func TestBindingOnUpdatePath(t *testing.T) {
	alice, bob, mallory := newAgent(t, "alice", nil), newAgent(t, "bob", nil), newAgent(t, "mallory", nil)
	group := memberGroup(t, alice, bob)
	for _, tt := range forgedLeaves(bob, mallory) {
		t.Run(tt.name, func(t *testing.T) {
			g := bob.mlsGroup(group)
			pc, err := g.Commit(&mls.CommitOptions{Rotate: &mls.Rotation{
				Credential: NewCredential(tt.claim.id()), SignatureKey: tt.signer.key.Ed25519()}})
			if err != nil {
				t.Fatal(err)
			}
			before := alice.snapshot()
			err = alice.try(func(tx *bolt.Tx) error { _, err := alice.s.Process(tx, marshal(t, pc.Message), did.DID{}); return err })
			if !errors.Is(err, ErrBinding) || !strings.Contains(err.Error(), tt.claim.id().String()) {
				t.Fatalf("Process(Commit with forged path) = %v, want ErrBinding naming %v", err, tt.claim.id())
			}
			if diff := cmp.Diff(before, alice.snapshot()); diff != "" {
				t.Errorf("state changed:\n%s", diff)
			}
		})
	}
	// The same Commit with bob's own credential is accepted.
	g := bob.mlsGroup(group)
	pc, err := g.Commit(&mls.CommitOptions{ForcePath: true})
	if err != nil {
		t.Fatal(err)
	}
	var r *Received
	alice.update(func(tx *bolt.Tx) (err error) {
		r, err = alice.s.Process(tx, marshal(t, pc.Message), did.DID{})
		return err
	})
	if r.Kind != KindCommit || r.Sender != bob.id() {
		t.Errorf("Commit seen as %v from %v, want a commit from %v", r.Kind, r.Sender, bob.id())
	}
}

func TestValidateSuccessor(t *testing.T) {
	alice, bob := newAgent(t, "alice", nil), newAgent(t, "bob", nil)
	if err := validateSuccessor(NewCredential(alice.id()), NewCredential(alice.id())); err != nil {
		t.Errorf("validateSuccessor(alice, alice) = %v, want nil", err)
	}
	err := validateSuccessor(NewCredential(alice.id()), NewCredential(bob.id()))
	var be *BindingError
	if !errors.As(err, &be) || !errors.Is(err, ErrBinding) || !strings.Contains(err.Error(), alice.id().String()) {
		t.Errorf("validateSuccessor(alice, bob) = %v, want a *BindingError naming alice", err)
	}
}
