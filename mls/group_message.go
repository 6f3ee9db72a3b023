package mls

import (
	"bytes"
	"errors"
	"fmt"
)

// This file holds application messages (RFC 9420, Section 15): encrypting
// them as PrivateMessages from this member and decrypting those of others.
// Handshake messages go through the commit code (group_commit.go).

// errNotApplication is returned by DecryptApplication for a handshake
// message, which must go through ProcessMessage.
var errNotApplication = errors.New("mls: not an application message; use ProcessMessage")

// EncryptApplication encrypts data as an application PrivateMessage of the
// current epoch (RFC 9420, Sections 6.3 and 15), with authenticatedData in
// the clear but authenticated. Each call uses the next generation of this
// member's application ratchet; the key is deleted at once (Section 9.2).
// It fails with the group's sticky error, ErrNotMember or
// ErrReInitPending when the group may not send.
func (g *Group) EncryptApplication(data, authenticatedData []byte) (_ *MLSMessage, err error) {
	defer g.recoverSticky(&err)
	if err := g.usable(); err != nil {
		return nil, err
	}
	content := &FramedContent{
		GroupID:           bytes.Clone(g.ctx.GroupID),
		Epoch:             g.ctx.Epoch,
		Sender:            Sender{Type: SenderTypeMember, Index: uint32(g.self)},
		AuthenticatedData: bytes.Clone(authenticatedData),
		ContentType:       ContentTypeApplication,
		ApplicationData:   bytes.Clone(data),
	}
	pm, err := g.protector.ProtectPrivate(content, g.sigPriv, nil)
	if err != nil {
		return nil, err
	}
	return &MLSMessage{Version: ProtocolMLS10, WireFormat: WireFormatPrivateMessage, PrivateMessage: pm}, nil
}

// An ApplicationMessage is decrypted application data and who sent it (RFC
// 9420, Section 15).
type ApplicationMessage struct {
	Sender            uint32 // leaf index of the sending member
	Data              []byte
	AuthenticatedData []byte
	// SignatureKey is the leaf signature key that verified the message, in
	// the epoch it was sent in: for a late message of a past epoch, the
	// sender may no longer be in the tree (or be someone else at that
	// leaf), so callers binding the sender's identity use this key rather
	// than the current tree.
	SignatureKey []byte
}

// DecryptApplication decrypts an application PrivateMessage of the current
// epoch, or of one of the Config.PastEpochs epochs before it (RFC 9420,
// Sections 6.3 and 15). Messages may arrive out of order within the secret
// tree's window; a replayed message fails with ErrGenerationUsed, one too
// far ahead with ErrGenerationTooFar, a message of another epoch with
// ErrEpochMismatch, and any decryption failure with ErrDecryption. Handshake messages are refused without touching any key.
func (g *Group) DecryptApplication(m *MLSMessage) (_ *ApplicationMessage, err error) {
	defer g.recoverSticky(&err)
	if g.err != nil {
		return nil, g.err
	}
	if m.WireFormat != WireFormatPrivateMessage || m.PrivateMessage == nil {
		if m.WireFormat == WireFormatPublicMessage && m.PublicMessage != nil &&
			m.PublicMessage.Content.ContentType == ContentTypeApplication {
			return nil, errApplicationInPublic
		}
		return nil, errNotApplication
	}
	if m.PrivateMessage.ContentType != ContentTypeApplication {
		return nil, errNotApplication
	}
	ac, err := g.openPrivate(m.PrivateMessage)
	if err != nil {
		return nil, err
	}
	key, err := g.signerIn(m.PrivateMessage.Epoch, ac.Content.Sender.Index)
	if err != nil {
		return nil, err
	}
	return &ApplicationMessage{
		Sender:            ac.Content.Sender.Index,
		Data:              ac.Content.ApplicationData,
		AuthenticatedData: ac.Content.AuthenticatedData,
		SignatureKey:      bytes.Clone(key),
	}, nil
}

// signerIn returns the signature key of the member at leaf in the given
// epoch: the current tree's, or the one kept for a past epoch.
func (g *Group) signerIn(epoch uint64, leaf uint32) ([]byte, error) {
	if epoch == g.ctx.Epoch {
		return g.memberSignatureKey(leaf)
	}
	for _, p := range g.past {
		if p.protector.ctx.Epoch == epoch {
			return p.signer(leaf)
		}
	}
	return nil, ErrEpochMismatch
}

// openPrivate unprotects a PrivateMessage of the current epoch, verifying
// the signature with the key of the sending member's leaf, or an
// application message of a past epoch the group still has keys for (see
// group_past.go).
func (g *Group) openPrivate(pm *PrivateMessage) (*AuthenticatedContent, error) {
	if pm.Epoch < g.ctx.Epoch {
		return g.openPast(pm)
	}
	return g.protector.UnprotectPrivate(pm, g.memberSignatureKey)
}

// memberSignatureKey returns the signature key of the member at leaf, or
// ErrUnknownSender if the leaf is blank or outside the tree (RFC 9420,
// Section 6.3.2).
func (g *Group) memberSignatureKey(leaf uint32) ([]byte, error) {
	l := g.tree.Leaf(leaf)
	if l == nil {
		return nil, fmt.Errorf("%w: leaf %d is blank", ErrUnknownSender, leaf)
	}
	return l.SignatureKey, nil
}
