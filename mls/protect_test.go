package mls

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"

	"golang.org/x/crypto/cryptobyte"

	"github.com/torpor-dev/torpor/mls/internal/secrettree"
	"github.com/torpor-dev/torpor/mls/internal/suite"
)

// protectEnv is a two-member epoch: sender is leaf 1, receivers decrypt
// with their own Protector over the same secrets.
type protectEnv struct {
	ctx   *GroupContext
	priv  ed25519.PrivateKey
	pub   []byte
	enc   []byte
	sd    []byte
	mk    []byte
	other []byte // signature key of leaf 0
}

func newProtectEnv(t testing.TB) *protectEnv {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	return &protectEnv{
		ctx: &GroupContext{Version: ProtocolMLS10, CipherSuite: 1, GroupID: []byte("group"), Epoch: 7,
			TreeHash: bytes.Repeat([]byte{3}, 32), ConfirmedTranscriptHash: bytes.Repeat([]byte{4}, 32)},
		priv: priv, pub: suite.SignaturePublicKey(priv),
		enc: bytes.Repeat([]byte{5}, 32), sd: bytes.Repeat([]byte{6}, 32), mk: bytes.Repeat([]byte{7}, 32),
		other: suite.SignaturePublicKey(other),
	}
}

func (e *protectEnv) protector(t testing.TB) *Protector {
	t.Helper()
	p, err := NewProtector(e.ctx, e.enc, e.sd, e.mk, 2)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *protectEnv) signer(leaf uint32) ([]byte, error) {
	switch leaf {
	case 0:
		return e.other, nil
	case 1:
		return e.pub, nil
	}
	return nil, ErrUnknownSender
}

func (e *protectEnv) app(data string) *FramedContent {
	return &FramedContent{GroupID: e.ctx.GroupID, Epoch: e.ctx.Epoch, Sender: Sender{Type: SenderTypeMember, Index: 1},
		AuthenticatedData: []byte("ad"), ContentType: ContentTypeApplication, ApplicationData: []byte(data)}
}

func (e *protectEnv) proposal() *FramedContent {
	return &FramedContent{GroupID: e.ctx.GroupID, Epoch: e.ctx.Epoch, Sender: Sender{Type: SenderTypeMember, Index: 1},
		ContentType: ContentTypeProposal, Proposal: &RemoveProposal{Removed: 0}}
}

func TestPrivateMessageRoundTripOutOfOrderAndReplay(t *testing.T) {
	e := newProtectEnv(t)
	send, recv := e.protector(t), e.protector(t)
	var msgs []*PrivateMessage
	for _, s := range []string{"zero", "one", "two", "three"} {
		m, err := send.ProtectPrivate(e.app(s), e.priv, nil)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	steps := []struct {
		name    string
		msg     int
		want    string
		wantErr error
	}{
		{"newest first", 3, "three", nil},
		{"late message", 1, "one", nil},
		{"replay", 1, "", ErrGenerationUsed},
		{"replay of newest", 3, "", ErrGenerationUsed},
		{"another late one", 0, "zero", nil},
		{"last one", 2, "two", nil},
	}
	for _, s := range steps {
		ac, err := recv.UnprotectPrivate(msgs[s.msg], e.signer)
		if !errors.Is(err, s.wantErr) {
			t.Fatalf("%s: UnprotectPrivate = %v, want %v", s.name, err, s.wantErr)
		}
		if err == nil && string(ac.Content.ApplicationData) != s.want {
			t.Errorf("%s: got %q, want %q", s.name, ac.Content.ApplicationData, s.want)
		}
	}
}

func TestPrivateMessageWindow(t *testing.T) {
	e := newProtectEnv(t)
	send, recv := e.protector(t), e.protector(t)
	recv.secrets.Window = secrettree.Window{MaxForward: 3}
	var last *PrivateMessage
	for i := 0; i < 5; i++ {
		m, err := send.ProtectPrivate(e.app("x"), e.priv, nil)
		if err != nil {
			t.Fatal(err)
		}
		last = m
	}
	if _, err := recv.UnprotectPrivate(last, e.signer); !errors.Is(err, ErrGenerationTooFar) {
		t.Errorf("generation 4 with a window of 3: %v, want ErrGenerationTooFar", err)
	}
}

func TestPrivateMessagePaddingAndTampering(t *testing.T) {
	e := newProtectEnv(t)
	send := e.protector(t)
	send.PaddingBlock = 128
	m, err := send.ProtectPrivate(e.proposal(), e.priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(m.Ciphertext) - suite.TagSize; got%128 != 0 {
		t.Errorf("padded plaintext is %d bytes, not a multiple of 128", got)
	}
	if ac, err := e.protector(t).UnprotectPrivate(m, e.signer); err != nil || ac.Content.Proposal.ProposalType() != ProposalTypeRemove {
		t.Fatalf("UnprotectPrivate = %v", err)
	}
	flip := func(f func(m *PrivateMessage)) *PrivateMessage {
		c := *m
		c.Ciphertext = bytes.Clone(m.Ciphertext)
		c.EncryptedSenderData = bytes.Clone(m.EncryptedSenderData)
		f(&c)
		return &c
	}
	tests := []struct {
		name string
		m    *PrivateMessage
		want error
	}{
		{"ciphertext bit", flip(func(m *PrivateMessage) { m.Ciphertext[40] ^= 1 }), ErrDecryption},
		{"sender data bit", flip(func(m *PrivateMessage) { m.EncryptedSenderData[0] ^= 1 }), ErrDecryption},
		{"authenticated data", flip(func(m *PrivateMessage) { m.AuthenticatedData = []byte("x") }), ErrDecryption},
		{"content type", flip(func(m *PrivateMessage) { m.ContentType = ContentTypeCommit }), ErrDecryption},
		{"wrong epoch", flip(func(m *PrivateMessage) { m.Epoch++ }), ErrEpochMismatch},
		{"wrong group", flip(func(m *PrivateMessage) { m.GroupID = []byte("other") }), ErrWrongGroup},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := e.protector(t).UnprotectPrivate(tt.m, e.signer); !errors.Is(err, tt.want) {
				t.Errorf("UnprotectPrivate = %v, want %v", err, tt.want)
			}
		})
	}
	// A signature by another member's key is rejected, and the key stays
	// available for the genuine message.
	recv := e.protector(t)
	wrongKey := func(uint32) ([]byte, error) { return e.other, nil }
	if _, err := recv.UnprotectPrivate(m, wrongKey); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("wrong signer: %v, want ErrInvalidSignature", err)
	}
	if _, err := recv.UnprotectPrivate(m, e.signer); err != nil {
		t.Errorf("after a failed attempt the genuine message fails: %v", err)
	}
}

// TestNonZeroPaddingRejected encrypts a PrivateMessageContent whose padding
// has a non-zero byte, with the right keys, and expects a parse error.
func TestNonZeroPaddingRejected(t *testing.T) {
	e := newProtectEnv(t)
	send := e.protector(t)
	content := e.app("hi")
	sig, err := send.sign(WireFormatPrivateMessage, content, e.priv)
	if err != nil {
		t.Fatal(err)
	}
	var b cryptobyte.Builder
	content.marshalBody(&b)
	(&FramedContentAuthData{Signature: sig}).marshal(&b, content.ContentType)
	pt := append(b.BytesOrPanic(), 0, 0, 1, 0)
	kn, err := send.secrets.Next(1, secrettree.Application)
	if err != nil {
		t.Fatal(err)
	}
	ct, _ := suite.Seal(kn.Key, kn.Nonce, privateContentAAD(content.GroupID, content.Epoch, content.ContentType, content.AuthenticatedData), pt)
	sdKey, sdNonce := secrettree.SenderDataKeyNonce(e.sd, ct)
	encSD, _ := suite.Seal(sdKey, sdNonce, senderDataAAD(content.GroupID, content.Epoch, content.ContentType),
		encode(&SenderData{LeafIndex: 1, Generation: kn.Generation}))
	m := &PrivateMessage{GroupID: content.GroupID, Epoch: content.Epoch, ContentType: content.ContentType,
		AuthenticatedData: content.AuthenticatedData, EncryptedSenderData: encSD, Ciphertext: ct}
	_, err = e.protector(t).UnprotectPrivate(m, e.signer)
	var pe *ParseError
	if !errors.As(err, &pe) || !errors.Is(err, ErrMalformed) {
		t.Errorf("non-zero padding: %v, want a *ParseError", err)
	}
	// The same plaintext with zero padding decrypts.
	pt[len(pt)-2] = 0
	ct, _ = suite.Seal(kn.Key, kn.Nonce, privateContentAAD(content.GroupID, content.Epoch, content.ContentType, content.AuthenticatedData), pt)
	sdKey, sdNonce = secrettree.SenderDataKeyNonce(e.sd, ct)
	m.EncryptedSenderData, _ = suite.Seal(sdKey, sdNonce, senderDataAAD(content.GroupID, content.Epoch, content.ContentType),
		encode(&SenderData{LeafIndex: 1, Generation: kn.Generation}))
	m.Ciphertext = ct
	if _, err := e.protector(t).UnprotectPrivate(m, e.signer); err != nil {
		t.Errorf("zero padding: %v", err)
	}
}

func TestReuseGuardIsRandom(t *testing.T) {
	e := newProtectEnv(t)
	// Two senders in the same state produce the same generation; the reuse
	// guard makes their nonces (and so ciphertexts) differ.
	a, err := e.protector(t).ProtectPrivate(e.app("same"), e.priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.protector(t).ProtectPrivate(e.app("same"), e.priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Ciphertext, b.Ciphertext) {
		t.Error("same generation gave identical ciphertexts: no reuse guard")
	}
}

func TestPublicMessageMembershipTag(t *testing.T) {
	e := newProtectEnv(t)
	p := e.protector(t)
	m, err := p.ProtectPublic(e.proposal(), e.priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UnprotectPublic(m, e.pub); err != nil {
		t.Fatalf("UnprotectPublic = %v", err)
	}
	tampered := *m
	tampered.MembershipTag = bytes.Clone(m.MembershipTag)
	tampered.MembershipTag[0] ^= 1
	if _, err := p.UnprotectPublic(&tampered, e.pub); !errors.Is(err, ErrDecryption) {
		t.Errorf("tampered membership tag: %v, want ErrDecryption", err)
	}
	other := *m
	other.Content.AuthenticatedData = []byte("changed")
	if _, err := p.UnprotectPublic(&other, e.pub); !errors.Is(err, ErrDecryption) {
		t.Errorf("changed content: %v, want ErrDecryption", err)
	}
	if _, err := p.UnprotectPublic(m, e.other); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("wrong signer: %v, want ErrInvalidSignature", err)
	}
	wrongEpoch := *m
	wrongEpoch.Content.Epoch = 6
	if _, err := p.UnprotectPublic(&wrongEpoch, e.pub); !errors.Is(err, ErrEpochMismatch) {
		t.Errorf("wrong epoch: %v, want ErrEpochMismatch", err)
	}
	if _, err := p.ProtectPublic(e.app("no"), e.priv, nil); err == nil {
		t.Error("ProtectPublic accepted application data")
	}
	c := e.proposal()
	c.Epoch = 8
	if _, err := p.ProtectPublic(c, e.priv, nil); !errors.Is(err, ErrEpochMismatch) {
		t.Errorf("ProtectPublic for another epoch: %v, want ErrEpochMismatch", err)
	}
}

// FuzzPrivateMessageContent decodes decrypted PrivateMessageContent
// plaintexts: never a panic, and an accepted one re-encodes to its input
// minus the (all-zero) padding.
func FuzzPrivateMessageContent(f *testing.F) {
	e := newProtectEnv(f)
	for _, c := range []*FramedContent{e.app("hello"), e.proposal()} {
		p := e.protector(f)
		p.PaddingBlock = 32
		sig, err := p.sign(WireFormatPrivateMessage, c, e.priv)
		if err != nil {
			f.Fatal(err)
		}
		pt, err := p.privateMessageContent(c, &FramedContentAuthData{Signature: sig})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(c.ContentType), pt)
	}
	f.Fuzz(func(t *testing.T, ct uint8, pt []byte) {
		ac := &AuthenticatedContent{Content: FramedContent{ContentType: ContentType(ct%3 + 1)}}
		if parsePrivateMessageContent(pt, ac) != nil {
			return
		}
		var b cryptobyte.Builder
		ac.Content.marshalBody(&b)
		ac.Auth.marshal(&b, ac.Content.ContentType)
		out, err := b.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, pt[:len(out)]) || !bytes.Equal(pt[len(out):], make([]byte, len(pt)-len(out))) {
			t.Fatalf("re-encoding %x gave %x", pt, out)
		}
	})
}

// TestPrivateApplicationContentAliases: the application data and signature
// parsed from a decrypted application message are slices of the plaintext,
// not copies, and an append to the data does not write over the signature
// after it.
func TestPrivateApplicationContentAliases(t *testing.T) {
	e := newProtectEnv(t)
	p := e.protector(t)
	c := e.app("hello")
	sig, err := p.sign(WireFormatPrivateMessage, c, e.priv)
	if err != nil {
		t.Fatal(err)
	}
	pt, err := p.privateMessageContent(c, &FramedContentAuthData{Signature: sig})
	if err != nil {
		t.Fatal(err)
	}
	ac := &AuthenticatedContent{Content: FramedContent{ContentType: ContentTypeApplication}}
	if err := parsePrivateMessageContent(pt, ac); err != nil {
		t.Fatal(err)
	}
	data := ac.Content.ApplicationData
	if string(data) != "hello" || !bytes.Equal(ac.Auth.Signature, sig) {
		t.Fatalf("parsed %q and signature %x, want hello and %x", data, ac.Auth.Signature, sig)
	}
	if &data[0] != &pt[bytes.Index(pt, []byte("hello"))] {
		t.Error("the application data is a copy of the plaintext")
	}
	_ = append(data, bytes.Repeat([]byte{0xff}, 64)...)
	if !bytes.Equal(ac.Auth.Signature, sig) {
		t.Error("an append to the application data changed the signature")
	}
}
