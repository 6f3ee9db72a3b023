package mls

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"io"

	"golang.org/x/crypto/cryptobyte"

	"github.com/torpor-dev/torpor/mls/internal/secrettree"
	"github.com/torpor-dev/torpor/mls/internal/suite"
	"github.com/torpor-dev/torpor/mls/internal/treemath"
)

// ratchetFor returns the secret-tree ratchet of a content type (RFC 9420,
// Section 9): handshake for proposals and commits, application otherwise.
func ratchetFor(ct ContentType) secrettree.ContentType {
	if ct == ContentTypeApplication {
		return secrettree.Application
	}
	return secrettree.Handshake
}

// privateContentAAD encodes PrivateContentAAD (RFC 9420, Section 6.3.1).
func privateContentAAD(groupID []byte, epoch uint64, ct ContentType, authData []byte) []byte {
	var b cryptobyte.Builder
	addOpaque(&b, groupID)
	b.AddUint64(epoch)
	b.AddUint8(uint8(ct))
	addOpaque(&b, authData)
	return b.BytesOrPanic()
}

// senderDataAAD encodes SenderDataAAD (RFC 9420, Section 6.3.2).
func senderDataAAD(groupID []byte, epoch uint64, ct ContentType) []byte {
	var b cryptobyte.Builder
	addOpaque(&b, groupID)
	b.AddUint64(epoch)
	b.AddUint8(uint8(ct))
	return b.BytesOrPanic()
}

// applyGuard returns nonce with its first four bytes XORed with guard (RFC
// 9420, Section 6.3.1).
func applyGuard(nonce []byte, guard [4]byte) []byte {
	out := append([]byte{}, nonce...)
	for i := range guard {
		out[i] ^= guard[i]
	}
	return out
}

// ProtectPrivate signs content and encrypts it as a PrivateMessage (RFC
// 9420, Section 6.3): the next generation of the sender's handshake or
// application ratchet, a fresh reuse guard, zero padding to PaddingBlock,
// and the SenderData encrypted under keys sampled from the ciphertext. The
// sender must be a member; confirmationTag is required for a commit.
func (p *Protector) ProtectPrivate(content *FramedContent, priv ed25519.PrivateKey, confirmationTag []byte) (*PrivateMessage, error) {
	if content.Sender.Type != SenderTypeMember {
		return nil, errors.New("mls: only members send PrivateMessages")
	}
	if err := p.checkEpoch(content.GroupID, content.Epoch); err != nil {
		return nil, err
	}
	if content.ContentType == ContentTypeCommit && len(confirmationTag) == 0 {
		return nil, errors.New("mls: a commit needs a confirmation tag")
	}
	sig, err := p.sign(WireFormatPrivateMessage, content, priv)
	if err != nil {
		return nil, err
	}
	auth := FramedContentAuthData{Signature: sig}
	if content.ContentType == ContentTypeCommit {
		auth.ConfirmationTag = confirmationTag
	}
	plaintext, err := p.privateMessageContent(content, &auth)
	if err != nil {
		return nil, err
	}
	m := &PrivateMessage{
		GroupID:           bytes.Clone(content.GroupID),
		Epoch:             content.Epoch,
		ContentType:       content.ContentType,
		AuthenticatedData: bytes.Clone(content.AuthenticatedData),
	}
	sd, err := p.sealContent(m, content.Sender.Index, plaintext)
	if err != nil {
		return nil, err
	}
	return m, p.sealSenderData(m, sd)
}

// sealContent encrypts plaintext into m.Ciphertext with the next key of the
// sender's ratchet and a fresh reuse guard, and returns the SenderData
// naming them (RFC 9420, Section 6.3.1).
func (p *Protector) sealContent(m *PrivateMessage, leaf uint32, plaintext []byte) (*SenderData, error) {
	sd := &SenderData{LeafIndex: leaf}
	if _, err := io.ReadFull(p.rand(), sd.ReuseGuard[:]); err != nil {
		return nil, err
	}
	kn, err := p.secrets.Next(treemath.LeafIndex(leaf), ratchetFor(m.ContentType))
	if err != nil {
		return nil, err
	}
	sd.Generation = kn.Generation
	aad := privateContentAAD(m.GroupID, m.Epoch, m.ContentType, m.AuthenticatedData)
	m.Ciphertext, err = suite.Seal(kn.Key, applyGuard(kn.Nonce, sd.ReuseGuard), aad, plaintext)
	return sd, err
}

// sealSenderData encrypts sd into m.EncryptedSenderData with the key and
// nonce sampled from m.Ciphertext (RFC 9420, Section 6.3.2).
func (p *Protector) sealSenderData(m *PrivateMessage, sd *SenderData) error {
	key, nonce := secrettree.SenderDataKeyNonce(p.senderDataSecret, m.Ciphertext)
	var err error
	m.EncryptedSenderData, err = suite.Seal(key, nonce, senderDataAAD(m.GroupID, m.Epoch, m.ContentType), encode(sd))
	return err
}

// privateMessageContent encodes PrivateMessageContent: the body, the auth
// data and zero padding (RFC 9420, Section 6.3.1).
func (p *Protector) privateMessageContent(content *FramedContent, auth *FramedContentAuthData) ([]byte, error) {
	var b cryptobyte.Builder
	content.marshalBody(&b)
	auth.marshal(&b, content.ContentType)
	pt, err := b.Bytes()
	if err != nil {
		return nil, err
	}
	if p.PaddingBlock > 0 {
		if r := len(pt) % p.PaddingBlock; r != 0 {
			pt = append(pt, make([]byte, p.PaddingBlock-r)...)
		}
	}
	return pt, nil
}

// SignerLookup returns the signature public key of the member at a leaf,
// or an error if the leaf is blank or outside the tree (RFC 9420, Section
// 6.3.2 requires a non-blank leaf).
type SignerLookup func(leaf uint32) ([]byte, error)

// UnprotectPrivate decrypts and verifies a PrivateMessage of this epoch
// (RFC 9420, Section 6.3): SenderData, the content with the sender's
// ratchet key for the generation (out of order within the window), the
// padding (all zero), then the signature with the key signer returns. Only
// after all checks pass does the secret tree change (RFC 9420, Section 9):
// the sender's leaf secret is derived and its ratchets started on first
// use, and the generation's key deleted (Section 9.2), so a replay of the
// same message fails with ErrGenerationUsed and a rejected message leaves
// the tree, and the group's saved state, as they were. Decryption failures
// of either layer return the opaque ErrDecryption.
func (p *Protector) UnprotectPrivate(m *PrivateMessage, signer SignerLookup) (*AuthenticatedContent, error) {
	if err := p.checkEpoch(m.GroupID, m.Epoch); err != nil {
		return nil, err
	}
	sd, err := p.openSenderData(m)
	if err != nil {
		return nil, err
	}
	signerPub, err := signer(sd.LeafIndex)
	if err != nil {
		return nil, err
	}
	leaf, ratchet := treemath.LeafIndex(sd.LeafIndex), ratchetFor(m.ContentType)
	ac, err := p.openContent(m, sd)
	if err != nil {
		return nil, err
	}
	if err := p.verify(WireFormatPrivateMessage, &ac.Content, signerPub, ac.Auth.Signature); err != nil {
		return nil, err
	}
	if err := p.secrets.Consume(leaf, ratchet, sd.Generation); err != nil {
		return nil, mapSecretTreeError(err)
	}
	return ac, nil
}

// openSenderData decrypts and decodes m's SenderData (RFC 9420, Section
// 6.3.2) and checks its leaf is inside the tree.
func (p *Protector) openSenderData(m *PrivateMessage) (*SenderData, error) {
	key, nonce := secrettree.SenderDataKeyNonce(p.senderDataSecret, m.Ciphertext)
	plain, err := suite.Open(key, nonce, senderDataAAD(m.GroupID, m.Epoch, m.ContentType), m.EncryptedSenderData)
	if err != nil {
		return nil, ErrDecryption
	}
	var sd SenderData
	if err := decodeAll(plain, &sd, "SenderData"); err != nil {
		return nil, err
	}
	if sd.LeafIndex >= p.secrets.Leaves() {
		return nil, ErrUnknownSender
	}
	return &sd, nil
}

// openContent decrypts m's content with the key of sd's generation, without
// deleting it, and decodes it (RFC 9420, Section 6.3.1).
func (p *Protector) openContent(m *PrivateMessage, sd *SenderData) (*AuthenticatedContent, error) {
	kn, err := p.secrets.Key(treemath.LeafIndex(sd.LeafIndex), ratchetFor(m.ContentType), sd.Generation)
	if err != nil {
		return nil, mapSecretTreeError(err)
	}
	aad := privateContentAAD(m.GroupID, m.Epoch, m.ContentType, m.AuthenticatedData)
	plaintext, err := suite.Open(kn.Key, applyGuard(kn.Nonce, sd.ReuseGuard), aad, m.Ciphertext)
	if err != nil {
		return nil, ErrDecryption
	}
	ac := &AuthenticatedContent{
		WireFormat: WireFormatPrivateMessage,
		Content: FramedContent{
			GroupID:           bytes.Clone(m.GroupID),
			Epoch:             m.Epoch,
			Sender:            Sender{Type: SenderTypeMember, Index: sd.LeafIndex},
			AuthenticatedData: bytes.Clone(m.AuthenticatedData),
			ContentType:       m.ContentType,
		},
	}
	if err := parsePrivateMessageContent(plaintext, ac); err != nil {
		return nil, err
	}
	return ac, nil
}

// parsePrivateMessageContent decodes the body and auth of a decrypted
// PrivateMessageContent into ac and checks that the padding is all zero
// (RFC 9420, Section 6.3.1: otherwise the message is malformed).
//
// The application data and the signature of an application message alias
// plaintext, which openContent decrypted into a buffer of its own, rather
// than copying kilobytes of data per message; the fields of a proposal or
// commit, which the group keeps, are copies.
func parsePrivateMessageContent(plaintext []byte, ac *AuthenticatedContent) error {
	d := newDecoder(plaintext)
	d.alias = ac.Content.ContentType == ContentTypeApplication
	if !ac.Content.unmarshalBody(&d) || !d.sub("auth", func(d *decoder) bool { return ac.Auth.unmarshal(d, ac.Content.ContentType) }) {
		return d.err("PrivateMessageContent")
	}
	for i, b := range d.s {
		if b != 0 {
			return &ParseError{Struct: "PrivateMessageContent", Field: "padding", Offset: d.offset() + i, Err: errors.New("non-zero padding")}
		}
	}
	if ac.Content.ContentType == ContentTypeCommit && len(ac.Auth.ConfirmationTag) == 0 {
		return errorf("PrivateMessageContent", "commit without a confirmation tag")
	}
	return nil
}

// mapSecretTreeError turns secret-tree errors into this package's.
func mapSecretTreeError(err error) error {
	switch {
	case errors.Is(err, secrettree.ErrGenerationUsed):
		return ErrGenerationUsed
	case errors.Is(err, secrettree.ErrGenerationTooFar):
		return ErrGenerationTooFar
	case errors.Is(err, secrettree.ErrLeafRange):
		return ErrUnknownSender
	}
	return err
}
