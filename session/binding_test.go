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

// TestBindingOnAdd: a KeyPackage claiming another agent's DID is refused
// before anything changes, whether this agent commits it, a member proposes
// it, or another member's Commit carries it.
func TestBindingOnAdd(t *testing.T) {
	alice, bob, mallory := newAgent(t, "alice", nil), newAgent(t, "bob", nil), newAgent(t, "mallory", nil)
	var group []byte
	alice.update(func(tx *bolt.Tx) error {
		in, err := alice.s.Create(tx, nil, Policy{})
		group = in.Group
		return err
	})
	var c *Committed
	alice.update(func(tx *bolt.Tx) (err error) {
		c, err = alice.s.Commit(tx, group, Change{Add: [][]byte{bob.keyPackage()}})
		return err
	})
	bob.update(func(tx *bolt.Tx) error {
		_, err := bob.s.Join(tx, c.Welcome, c.RatchetTree, JoinOptions{})
		return err
	})
	forged := forgedKeyPackage(t, bob.id(), mallory) // claims bob, signed by mallory

	t.Run("commit", func(t *testing.T) {
		before := alice.snapshot()
		err := alice.try(func(tx *bolt.Tx) error {
			_, err := alice.s.Commit(tx, group, Change{Add: [][]byte{forged}})
			return err
		})
		if !errors.Is(err, ErrBinding) || !strings.Contains(err.Error(), bob.id().String()) {
			t.Fatalf("Commit(Add forged) = %v, want ErrBinding naming %v", err, bob.id())
		}
		if diff := cmp.Diff(before, alice.snapshot()); diff != "" {
			t.Errorf("state changed:\n%s", diff)
		}
	})
	kp, err := ParseKeyPackage(forged)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("received proposal", func(t *testing.T) {
		g := bob.mlsGroup(group)
		m, err := g.Propose(&mls.AddProposal{KeyPackage: *kp}, nil)
		if err != nil {
			t.Fatal(err)
		}
		before := alice.snapshot()
		err = alice.try(func(tx *bolt.Tx) error { _, err := alice.s.Process(tx, marshal(t, m), did.DID{}); return err })
		if !errors.Is(err, ErrBinding) {
			t.Fatalf("Process(Add proposal of forged) = %v, want ErrBinding", err)
		}
		if diff := cmp.Diff(before, alice.snapshot()); diff != "" {
			t.Errorf("state changed:\n%s", diff)
		}
	})
	t.Run("received commit", func(t *testing.T) {
		g := bob.mlsGroup(group) // bob's raw group, without the binding check
		pc, err := g.Commit(&mls.CommitOptions{Proposals: []mls.Proposal{&mls.AddProposal{KeyPackage: *kp}}})
		if err != nil {
			t.Fatal(err)
		}
		before := alice.snapshot()
		err = alice.try(func(tx *bolt.Tx) error { _, err := alice.s.Process(tx, marshal(t, pc.Message), did.DID{}); return err })
		if !errors.Is(err, ErrBinding) {
			t.Fatalf("Process(Commit adding forged) = %v, want ErrBinding", err)
		}
		if diff := cmp.Diff(before, alice.snapshot()); diff != "" {
			t.Errorf("state changed:\n%s", diff)
		}
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
	var group []byte
	alice.update(func(tx *bolt.Tx) error {
		in, err := alice.s.Create(tx, nil, Policy{})
		group = in.Group
		return err
	})
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
