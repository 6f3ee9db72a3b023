package mls

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// proposalFixture is a group of alice (leaf 0), bob and carol with
// proposals to commit in lists.
type proposalFixture struct {
	cs                []*client
	alice, bob, carol Sender
	kp, bobAgain      *KeyPackage // dave's, and a new one of bob's
	nonce             []byte
	psk               *PreSharedKeyProposal
}

func newProposalFixture(t *testing.T) *proposalFixture {
	cs := newTestGroup(t, "alice", "bob", "carol")
	member := func(i uint32) Sender { return Sender{Type: SenderTypeMember, Index: i} }
	fx := &proposalFixture{cs: cs, alice: member(0), bob: member(1), carol: member(2), nonce: bytes.Repeat([]byte{1}, 32)}
	fx.kp, _ = newClient(t, "dave").keyPackage(t)
	fx.bobAgain, _ = (&client{name: "bob", sig: cs[1].sig, cfg: &Config{}}).keyPackage(t)
	fx.psk = &PreSharedKeyProposal{PSK: PreSharedKeyID{Type: PSKTypeExternal, PSKID: []byte("x"), Nonce: fx.nonce}}
	return fx
}

// update is an Update proposal of c with a new encryption key.
func (fx *proposalFixture) update(t *testing.T, c *client) *UpdateProposal {
	leaf := c.g.tree.leaf(c.g.self).clone()
	leaf.Source, leaf.Lifetime = LeafNodeSourceUpdate, Lifetime{}
	_, pub, _ := newKeyPair(t)
	leaf.EncryptionKey = pub
	if err := leaf.sign(c.sig, c.g.ctx.GroupID, uint32(c.g.self)); err != nil {
		t.Fatal(err)
	}
	return &UpdateProposal{LeafNode: *leaf}
}

// requireCredential is a GroupContextExtensions proposal requiring ct.
func requireCredential(ct CredentialType) *GroupContextExtensionsProposal {
	return &GroupContextExtensionsProposal{Extensions: []Extension{
		RequiredCapabilitiesExtension(RequiredCapabilities{CredentialTypes: []CredentialType{ct}})}}
}

type listCase struct {
	name string
	list []committedProposal
	want error // nil: valid
}

// memberLists are proposal lists committed by alice and what
// applyProposals must say of each (RFC 9420, Section 12.2).
func (fx *proposalFixture) memberLists(t *testing.T) []listCase {
	type cp = committedProposal
	alice, bob, carol, kp, psk, nonce, cs := fx.alice, fx.bob, fx.carol, fx.kp, fx.psk, fx.nonce, fx.cs
	update, rc := func(c *client) *UpdateProposal { return fx.update(t, c) }, requireCredential
	reinit := &ReInitProposal{GroupID: []byte("new"), Version: 1, CipherSuite: 1}
	return []listCase{
		{"empty", nil, nil},
		{"add, remove, update, psk", []cp{{&AddProposal{KeyPackage: *kp}, alice}, {&RemoveProposal{Removed: 2}, alice},
			{update(cs[1]), bob}, {psk, alice}}, nil},
		{"update by the committer", []cp{{update(cs[0]), alice}}, ErrInvalidProposal},
		{"update and remove of one leaf", []cp{{update(cs[1]), bob}, {&RemoveProposal{Removed: 1}, alice}}, ErrInvalidProposal},
		{"two updates of one leaf", []cp{{update(cs[1]), bob}, {update(cs[1]), bob}}, ErrInvalidProposal},
		{"update from an external sender", []cp{{update(cs[1]), Sender{Type: SenderTypeExternal}}}, ErrInvalidProposal},
		{"remove of the committer", []cp{{&RemoveProposal{Removed: 0}, carol}}, ErrInvalidProposal},
		{"remove of a blank leaf", []cp{{&RemoveProposal{Removed: 3}, alice}}, ErrInvalidProposal},
		{"one client added twice", []cp{{&AddProposal{KeyPackage: *kp}, alice}, {&AddProposal{KeyPackage: *kp}, bob}}, ErrInvalidProposal},
		{"add of a member", []cp{{&AddProposal{KeyPackage: *fx.bobAgain}, alice}}, ErrInvalidProposal},
		{"add of a member being removed", []cp{{&RemoveProposal{Removed: 1}, alice}, {&AddProposal{KeyPackage: *fx.bobAgain}, alice}}, nil},
		{"add for another suite", []cp{{&AddProposal{KeyPackage: withSuite(kp, 2)}, alice}}, ErrInvalidProposal},
		{"same PSK twice", []cp{{psk, alice}, {psk, bob}}, ErrInvalidProposal},
		{"short PSK nonce", []cp{{&PreSharedKeyProposal{PSK: PreSharedKeyID{Type: PSKTypeExternal, Nonce: nonce[:4]}}, alice}}, ErrInvalidProposal},
		{"reinit resumption PSK", []cp{{&PreSharedKeyProposal{PSK: PreSharedKeyID{Type: PSKTypeResumption, Usage: ResumptionPSKUsageReInit, Nonce: nonce}}, alice}}, ErrInvalidProposal},
		{"two GroupContextExtensions", []cp{{rc(CredentialTypeBasic), alice}, {rc(CredentialTypeBasic), bob}}, ErrInvalidProposal},
		{"required capability nobody has", []cp{{rc(CredentialTypeX509), alice}}, ErrInvalidProposal},
		{"reinit alone", []cp{{reinit, alice}}, nil},
		{"reinit with others", []cp{{reinit, alice}, {psk, alice}}, ErrInvalidProposal},
		{"external init in a member commit", []cp{{&ExternalInitProposal{KEMOutput: nonce}, alice}}, ErrInvalidProposal},
		{"unknown proposal type", []cp{{&UnknownProposal{Type: 0x0a0a}, alice}}, ErrInvalidProposal},
	}
}

// TestProposalListValidation checks the rules of RFC 9420, Section 12.2 on
// lists committed by alice (leaf 0) in a group of alice, bob and carol.
func TestProposalListValidation(t *testing.T) {
	fx := newProposalFixture(t)
	for _, tt := range fx.memberLists(t) {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fx.cs[0].g.applyProposals(tt.list, fx.alice, false, false)
			if tt.want == nil && err != nil {
				t.Errorf("applyProposals = %v, want success", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("applyProposals = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestExternalCommitProposalLists checks the proposal list of an external
// Commit (RFC 9420, Section 12.2): one ExternalInit, at most one Remove,
// nothing else but PSKs.
func TestExternalCommitProposalLists(t *testing.T) {
	fx := newProposalFixture(t)
	type cp = committedProposal
	newMember := Sender{Type: SenderTypeNewMemberCommit}
	init := &ExternalInitProposal{KEMOutput: fx.nonce}
	external := []struct {
		name string
		list []cp
		ok   bool
	}{
		{"external init alone", []cp{{init, newMember}}, true},
		{"no external init", []cp{{fx.psk, newMember}}, false},
		{"external init and an add", []cp{{init, newMember}, {&AddProposal{KeyPackage: *fx.kp}, newMember}}, false},
		{"two removes", []cp{{init, newMember}, {&RemoveProposal{Removed: 1}, newMember}, {&RemoveProposal{Removed: 2}, newMember}}, false},
	}
	for _, tt := range external {
		_, err := fx.cs[0].g.applyProposals(tt.list, newMember, true, false)
		if (err == nil) != tt.ok {
			t.Errorf("external %s: applyProposals = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func withSuite(kp *KeyPackage, cs CipherSuite) KeyPackage {
	c := *kp
	c.CipherSuite = cs
	return c
}

func newKeyPair(t testing.TB) (priv, pub []byte, err error) {
	t.Helper()
	kp, p, err := NewKeyPackage(nil, NewBasicCredential([]byte("k")), newSigner(t))
	if err != nil {
		t.Fatal(err)
	}
	return p.EncryptionPriv, kp.LeafNode.EncryptionKey, nil
}

// TestAddLifetimes: our own Commits refuse expired KeyPackages; Commits of
// others that add one are followed (the check would fork the group when
// members process a Commit at different times).
func TestAddLifetimes(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob")
	alice, bob := cs[0], cs[1]
	dave := newClient(t, "dave")
	kp, priv := dave.keyPackage(t)
	later := time.Now().Add(365 * 24 * time.Hour)
	bob.g.config.Time = func() time.Time { return later }
	if _, err := bob.g.Commit(&CommitOptions{Proposals: []Proposal{&AddProposal{KeyPackage: *kp}}}); !errors.Is(err, ErrLifetime) {
		t.Errorf("Commit adding an expired KeyPackage = %v, want ErrLifetime", err)
	}
	if _, err := bob.g.Propose(&AddProposal{KeyPackage: *kp}, nil); !errors.Is(err, ErrLifetime) {
		t.Errorf("Propose of an expired KeyPackage = %v, want ErrLifetime", err)
	}
	pc := alice.commit(t, &CommitOptions{Proposals: []Proposal{&AddProposal{KeyPackage: *kp}}})
	process(t, pc.Message, bob)
	dave.join(t, pc, kp, priv, alice.g.RatchetTree())
	sameState(t, alice, bob, dave)
}

// TestReInitCommit: after a Commit with a ReInit, no member may send.
func TestReInitCommit(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob")
	reinit := &ReInitProposal{GroupID: []byte("next"), Version: ProtocolMLS10, CipherSuite: 1}
	pc := cs[0].commit(t, &CommitOptions{Proposals: []Proposal{reinit}})
	res := process(t, pc.Message, cs[1])
	if res[0].Commit.ReInit == nil {
		t.Error("summary lacks the ReInit")
	}
	for _, c := range cs {
		if _, err := c.g.EncryptApplication([]byte("x"), nil); !errors.Is(err, ErrReInitPending) {
			t.Errorf("%s: EncryptApplication after ReInit = %v", c.name, err)
		}
		if _, err := c.g.Commit(nil); !errors.Is(err, ErrReInitPending) {
			t.Errorf("%s: Commit after ReInit = %v", c.name, err)
		}
	}
}

// TestEpochMismatchAndReplay: a Commit from an old epoch is refused, and a
// Commit cannot be processed twice.
func TestEpochMismatchAndReplay(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob", "carol")
	pc := cs[0].commit(t, &CommitOptions{ForcePath: true})
	process(t, pc.Message, cs[1], cs[2])
	if _, err := cs[1].g.ProcessMessage(roundTrip(t, pc.Message)); !errors.Is(err, ErrEpochMismatch) {
		t.Errorf("second processing = %v, want ErrEpochMismatch", err)
	}
	stale, err := cs[1].g.Commit(nil)
	if err != nil {
		t.Fatal(err)
	}
	pc = cs[0].commit(t, &CommitOptions{ForcePath: true})
	process(t, pc.Message, cs[1], cs[2])
	if _, err := cs[2].g.ProcessMessage(roundTrip(t, stale.Message)); !errors.Is(err, ErrEpochMismatch) {
		t.Errorf("stale commit = %v, want ErrEpochMismatch", err)
	}
	if err := cs[1].g.MergeCommit(stale); !errors.Is(err, ErrEpochMismatch) {
		t.Errorf("MergeCommit of a stale commit = %v, want ErrEpochMismatch", err)
	}
}

func TestProposalEchoCachedOnce(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob")
	m, err := cs[0].g.Propose(&RemoveProposal{Removed: 1}, &SendOptions{Public: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs[0].g.ProcessMessage(roundTrip(t, m)); err != nil {
		t.Fatalf("own proposal echoed back: %v", err)
	}
	if n := len(cs[0].g.proposals); n != 1 {
		t.Fatalf("%d cached proposals, want 1", n)
	}
	pc, err := cs[0].g.Commit(nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(pc.next.tree.members()); n != 1 {
		t.Errorf("%d members after the Remove, want 1", n)
	}
}
