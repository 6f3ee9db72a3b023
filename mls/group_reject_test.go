package mls

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/torpor-dev/torpor/mls/internal/secrettree"
	"github.com/torpor-dev/torpor/mls/internal/suite"
	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
)

// A rejected message must leave the group's saved state byte for byte as
// it was (ProcessMessage's contract). RFC 9420, Section 6.3 has the
// receiver decrypt and verify a PrivateMessage with the sender's ratchet
// key; the secret tree of Section 9 must not be advanced by a message that
// fails those checks, and Section 9.2 deletes a key only once it was used. rejectFixture is a
// group of alice (leaf 0), bob (leaf 1, the receiver under test) and carol
// (leaf 2), in its second epoch, in which bob has seen nothing from carol,
// with messages of the first epoch carol made before the Commit.
type rejectFixture struct {
	alice, bob, carol *client
	// pastFresh and pastTampered are application messages of the previous
	// epoch from carol, whom bob never heard from in that epoch.
	pastFresh, pastTampered *MLSMessage
	// keys is bob's secret tree at the start of the epoch, before any
	// leaf's ratchet was started: forged messages take their keys from a
	// copy of it.
	keys []byte
}

func newRejectFixture(t *testing.T) *rejectFixture {
	t.Helper()
	cs := newTestGroup(t, "alice", "bob", "carol")
	fx := &rejectFixture{alice: cs[0], bob: cs[1], carol: cs[2]}
	fx.pastFresh = fx.encrypt(t, fx.carol, "before the commit")
	fx.pastTampered = tamperContent(fx.encrypt(t, fx.carol, "before the commit, tampered"))
	pc := fx.alice.commit(t, &CommitOptions{ForcePath: true})
	process(t, pc.Message, fx.bob, fx.carol)
	var err error
	if fx.keys, err = fx.bob.g.protector.secrets.MarshalBinary(); err != nil {
		t.Fatal(err)
	}
	return fx
}

func (fx *rejectFixture) encrypt(t *testing.T, c *client, s string) *MLSMessage {
	t.Helper()
	m, err := c.g.EncryptApplication([]byte(s), nil)
	if err != nil {
		t.Fatal(err)
	}
	return roundTrip(t, m)
}

// tamperContent flips a bit of the content ciphertext after the sample the
// SenderData key is derived from (RFC 9420, Section 6.3.2), so that the
// SenderData still decrypts and the content does not.
func tamperContent(m *MLSMessage) *MLSMessage {
	ct := m.PrivateMessage.Ciphertext
	ct[len(ct)-1] ^= 1
	return m
}

// key returns the key and nonce of generation gen of leaf's ratchet for
// ct in the fixture's epoch, from a copy of fx.keys.
func (fx *rejectFixture) key(t *testing.T, ct ContentType, leaf, gen uint32) secrettree.KeyNonce {
	t.Helper()
	var st secrettree.Tree
	if err := st.UnmarshalBinary(fx.keys); err != nil {
		t.Fatal(err)
	}
	st.Window = secrettree.Window{MaxForward: ^uint32(0)}
	kn, err := st.Key(tm.LeafIndex(leaf), ratchetFor(ct), gen)
	if err != nil {
		t.Fatal(err)
	}
	return kn
}

// sealRaw makes a PrivateMessage of the fixture's epoch with leaf in its
// SenderData and plaintext as its PrivateMessageContent, encrypted under
// the key of generation gen of that leaf's ratchet (reuse guard zero).
func (fx *rejectFixture) sealRaw(t *testing.T, ct ContentType, leaf, gen uint32, plaintext []byte) *MLSMessage {
	t.Helper()
	p := fx.bob.g.protector
	kn := fx.key(t, ct, leaf, gen)
	m := &PrivateMessage{GroupID: bytes.Clone(p.ctx.GroupID), Epoch: p.ctx.Epoch, ContentType: ct}
	sd := &SenderData{LeafIndex: leaf, Generation: gen}
	aad := privateContentAAD(m.GroupID, m.Epoch, m.ContentType, m.AuthenticatedData)
	var err error
	if m.Ciphertext, err = suite.Seal(kn.Key, kn.Nonce, aad, plaintext); err != nil {
		t.Fatal(err)
	}
	if err := p.sealSenderData(m, sd); err != nil {
		t.Fatal(err)
	}
	return &MLSMessage{Version: ProtocolMLS10, WireFormat: WireFormatPrivateMessage, PrivateMessage: m}
}

// content returns carol's PrivateMessageContent of an application message
// "x" or a proposal to remove alice, signed with key.
func (fx *rejectFixture) content(t *testing.T, ct ContentType, key ed25519.PrivateKey) []byte {
	t.Helper()
	c := fx.carol
	content := &FramedContent{GroupID: c.g.ctx.GroupID, Epoch: c.g.ctx.Epoch,
		Sender: Sender{Type: SenderTypeMember, Index: c.g.LeafIndex()}, ContentType: ct}
	switch ct {
	case ContentTypeApplication:
		content.ApplicationData = []byte("x")
	case ContentTypeProposal:
		content.Proposal = &RemoveProposal{Removed: 0}
	}
	sig, err := c.g.protector.sign(WireFormatPrivateMessage, content, key)
	if err != nil {
		t.Fatal(err)
	}
	pt, err := c.g.protector.privateMessageContent(content, &FramedContentAuthData{Signature: sig})
	if err != nil {
		t.Fatal(err)
	}
	return pt
}

// signedBy is carol's message of content type ct signed with key, at
// generation 0.
func (fx *rejectFixture) signedBy(t *testing.T, ct ContentType, key ed25519.PrivateKey) *MLSMessage {
	t.Helper()
	return fx.sealRaw(t, ct, fx.carol.g.LeafIndex(), 0, fx.content(t, ct, key))
}

// rejectCase builds a message bob must reject; it may first make bob (g)
// process other messages, as a replay needs.
type rejectCase struct {
	name  string
	build func(t *testing.T, fx *rejectFixture, g *Group) *MLSMessage
	want  error // nil: any error
}

var rejectCases = []rejectCase{
	{"tampered ciphertext from a fresh sender", func(t *testing.T, fx *rejectFixture, _ *Group) *MLSMessage {
		return tamperContent(fx.encrypt(t, fx.carol, "hello"))
	}, ErrDecryption},
	{"tampered ciphertext from a known sender", func(t *testing.T, fx *rejectFixture, g *Group) *MLSMessage {
		mustProcess(t, g, fx.encrypt(t, fx.alice, "first"))
		return tamperContent(fx.encrypt(t, fx.alice, "second"))
	}, ErrDecryption},
	{"tampered sender data", func(t *testing.T, fx *rejectFixture, _ *Group) *MLSMessage {
		m := fx.encrypt(t, fx.carol, "hello")
		m.PrivateMessage.EncryptedSenderData[0] ^= 1
		return m
	}, ErrDecryption},
	{"tampered ciphertext of a past epoch from a fresh sender", func(t *testing.T, fx *rejectFixture, _ *Group) *MLSMessage {
		return fx.pastTampered
	}, ErrDecryption},
	{"replay of a past epoch's message", func(t *testing.T, fx *rejectFixture, g *Group) *MLSMessage {
		mustProcess(t, g, fx.pastFresh)
		return fx.pastFresh
	}, ErrGenerationUsed},
	{"wrong epoch (future)", func(t *testing.T, fx *rejectFixture, _ *Group) *MLSMessage {
		m := fx.encrypt(t, fx.carol, "hello")
		m.PrivateMessage.Epoch++
		return m
	}, ErrEpochMismatch},
	{"handshake of a past epoch", func(t *testing.T, fx *rejectFixture, _ *Group) *MLSMessage {
		m := fx.signedBy(t, ContentTypeProposal, fx.carol.sig)
		m.PrivateMessage.Epoch--
		return m
	}, ErrEpochMismatch},
	{"wrong group id", func(t *testing.T, fx *rejectFixture, _ *Group) *MLSMessage {
		m := fx.encrypt(t, fx.carol, "hello")
		m.PrivateMessage.GroupID = []byte("another group")
		return m
	}, ErrWrongGroup},
	{"bad signature from a fresh sender", func(t *testing.T, fx *rejectFixture, _ *Group) *MLSMessage {
		return fx.signedBy(t, ContentTypeApplication, fx.alice.sig)
	}, ErrInvalidSignature},
	{"bad signature on a proposal from a fresh sender", func(t *testing.T, fx *rejectFixture, _ *Group) *MLSMessage {
		return fx.signedBy(t, ContentTypeProposal, fx.alice.sig)
	}, ErrInvalidSignature},
	{"malformed content from a fresh sender", func(t *testing.T, fx *rejectFixture, _ *Group) *MLSMessage {
		return fx.sealRaw(t, ContentTypeApplication, 2, 0, []byte{0xff, 0xff, 0xff})
	}, ErrMalformed},
	{"non-zero padding from a fresh sender", func(t *testing.T, fx *rejectFixture, _ *Group) *MLSMessage {
		pt := fx.content(t, ContentTypeApplication, fx.carol.sig)
		return fx.sealRaw(t, ContentTypeApplication, 2, 0, append(pt, 0, 1))
	}, ErrMalformed},
	{"blank sender leaf", func(t *testing.T, fx *rejectFixture, _ *Group) *MLSMessage {
		return fx.sealRaw(t, ContentTypeApplication, 3, 0, []byte{0})
	}, ErrUnknownSender},
	{"generation too far ahead from a fresh sender", func(t *testing.T, fx *rejectFixture, _ *Group) *MLSMessage {
		pt := fx.content(t, ContentTypeApplication, fx.carol.sig)
		return fx.sealRaw(t, ContentTypeApplication, 2, secrettree.DefaultMaxForward+1, pt)
	}, ErrGenerationTooFar},
	{"replayed generation", func(t *testing.T, fx *rejectFixture, g *Group) *MLSMessage {
		m := fx.encrypt(t, fx.carol, "once")
		mustProcess(t, g, m)
		return m
	}, ErrGenerationUsed},
	{"bad membership tag", func(t *testing.T, fx *rejectFixture, _ *Group) *MLSMessage {
		m := publicProposal(t, fx.alice)
		m.PublicMessage.MembershipTag[0] ^= 1
		return m
	}, ErrDecryption},
	{"bad signature on a PublicMessage", func(t *testing.T, fx *rejectFixture, _ *Group) *MLSMessage {
		m := publicProposal(t, fx.alice)
		m.PublicMessage.Auth.Signature[0] ^= 1
		return m
	}, nil},
	{"commit with a wrong confirmation tag", func(t *testing.T, fx *rejectFixture, _ *Group) *MLSMessage {
		return forgeCommit(t, fx.alice, nil, true)
	}, nil},
	{"not a group message", func(t *testing.T, fx *rejectFixture, _ *Group) *MLSMessage {
		return &MLSMessage{Version: ProtocolMLS10, WireFormat: WireFormatPrivateMessage}
	}, nil},
}

func mustProcess(t *testing.T, g *Group, m *MLSMessage) {
	t.Helper()
	if _, err := g.ProcessMessage(roundTrip(t, m)); err != nil {
		t.Fatal(err)
	}
}

// publicProposal is a Remove of carol sent by c as a PublicMessage, not
// cached by c.
func publicProposal(t *testing.T, c *client) *MLSMessage {
	t.Helper()
	content := &FramedContent{GroupID: c.g.ctx.GroupID, Epoch: c.g.ctx.Epoch,
		Sender: Sender{Type: SenderTypeMember, Index: c.g.LeafIndex()}, ContentType: ContentTypeProposal,
		Proposal: &RemoveProposal{Removed: 2}}
	pm, err := c.g.protector.ProtectPublic(content, c.sig, nil)
	if err != nil {
		t.Fatal(err)
	}
	return roundTrip(t, &MLSMessage{Version: ProtocolMLS10, WireFormat: WireFormatPublicMessage, PublicMessage: pm})
}

func savedState(t *testing.T, g *Group) []byte {
	t.Helper()
	st, err := g.State()
	if err != nil {
		t.Fatal(err)
	}
	return append(append([]byte{}, st.Tree...), st.Secrets...)
}

// TestRejectedMessageLeavesStateUnchanged runs every rejection path of
// ProcessMessage (and of DecryptApplication for application messages) on a
// copy of bob's group and compares the saved state before and after.
func TestRejectedMessageLeavesStateUnchanged(t *testing.T) {
	fx := newRejectFixture(t)
	snapshot, err := fx.bob.g.State()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range rejectCases {
		t.Run(tc.name, func(t *testing.T) {
			for _, via := range []string{"ProcessMessage", "DecryptApplication"} {
				g, err := RestoreGroup(fx.bob.cfg, snapshot)
				if err != nil {
					t.Fatal(err)
				}
				m := tc.build(t, fx, g)
				if via == "DecryptApplication" && (m.PrivateMessage == nil || m.PrivateMessage.ContentType != ContentTypeApplication) {
					continue
				}
				before := savedState(t, g)
				if err := rejectVia(g, via, m); err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
					t.Fatalf("%s = %v, want %v", via, err, tc.want)
				}
				if g.Err() != nil {
					t.Fatalf("%s left a sticky error: %v", via, g.Err())
				}
				if !bytes.Equal(before, savedState(t, g)) {
					t.Errorf("%s: the rejected message changed the saved state", via)
				}
			}
		})
	}
}

func rejectVia(g *Group, via string, m *MLSMessage) error {
	if via == "DecryptApplication" {
		_, err := g.DecryptApplication(m)
		return err
	}
	_, err := g.ProcessMessage(m)
	return err
}
