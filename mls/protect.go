package mls

import (
	"crypto/ed25519"
	"crypto/hmac"
	cryptorand "crypto/rand"
	"errors"
	"io"

	"golang.org/x/crypto/cryptobyte"

	"github.com/torpor-dev/torpor/mls/internal/secrettree"
	"github.com/torpor-dev/torpor/mls/internal/suite"
)

// This file turns FramedContent into PublicMessage and PrivateMessage and
// back (RFC 9420, Sections 6.1 to 6.3). The PrivateMessage half is in
// protect_private.go.

// A Protector protects and unprotects the messages of one epoch: signatures
// over FramedContentTBS (RFC 9420, Section 6.1), membership tags (Section
// 6.2), and PrivateMessage encryption with the epoch's secret tree (Sections
// 6.3 and 9). A Group keeps one per epoch. It is exported for
// harnesses that hold an epoch's secrets without a Group, such as the
// working group's message-protection vectors.
//
// A Protector is not safe for concurrent use: decrypting and encrypting
// advance the secret tree.
type Protector struct {
	ctx              *GroupContext
	senderDataSecret []byte
	membershipKey    []byte
	secrets          *secrettree.Tree

	// Rand supplies reuse guards (RFC 9420, Section 6.3.1); nil means
	// crypto/rand.
	Rand io.Reader
	// PaddingBlock pads each PrivateMessageContent with zero bytes to a
	// multiple of this many bytes (RFC 9420, Section 6.3.1); zero or less
	// means no padding.
	PaddingBlock int
}

// NewProtector returns the Protector of the epoch whose GroupContext is ctx,
// for a tree of leaves leaves (a power of two). encryptionSecret seeds the
// secret tree (RFC 9420, Section 9); the caller should forget it afterwards.
func NewProtector(ctx *GroupContext, encryptionSecret, senderDataSecret, membershipKey []byte, leaves uint32) (*Protector, error) {
	tree, err := secrettree.New(encryptionSecret, leaves)
	if err != nil {
		return nil, err
	}
	return &Protector{
		ctx:              ctx.clone(),
		senderDataSecret: append([]byte{}, senderDataSecret...),
		membershipKey:    append([]byte{}, membershipKey...),
		secrets:          tree,
	}, nil
}

func (p *Protector) rand() io.Reader {
	if p.Rand != nil {
		return p.Rand
	}
	return cryptorand.Reader
}

// checkEpoch returns ErrWrongGroup or ErrEpochMismatch if content is not
// for p's group and epoch.
func (p *Protector) checkEpoch(groupID []byte, epoch uint64) error {
	if !hmac.Equal(groupID, p.ctx.GroupID) {
		return ErrWrongGroup
	}
	if epoch != p.ctx.Epoch {
		return ErrEpochMismatch
	}
	return nil
}

// sign fills auth.Signature: SignWithLabel(priv, "FramedContentTBS",
// FramedContentTBS) (RFC 9420, Section 6.1).
func (p *Protector) sign(wf WireFormat, content *FramedContent, priv ed25519.PrivateKey) ([]byte, error) {
	return suite.SignWithLabel(priv, "FramedContentTBS", FramedContentTBS(wf, content, p.ctx))
}

// verify checks a FramedContent signature against pub.
func (p *Protector) verify(wf WireFormat, content *FramedContent, pub, sig []byte) error {
	if !suite.VerifyWithLabel(pub, "FramedContentTBS", FramedContentTBS(wf, content, p.ctx), sig) {
		return ErrInvalidSignature
	}
	return nil
}

// membershipTag returns MAC(membership_key, AuthenticatedContentTBM) with
// AuthenticatedContentTBM = FramedContentTBS || FramedContentAuthData (RFC
// 9420, Section 6.2).
func (p *Protector) membershipTag(content *FramedContent, auth *FramedContentAuthData) ([]byte, error) {
	tbm := FramedContentTBS(WireFormatPublicMessage, content, p.ctx)
	authBytes, err := marshalAuth(auth, content.ContentType)
	if err != nil {
		return nil, err
	}
	return suite.MAC(p.membershipKey, append(tbm, authBytes...)), nil
}

// errApplicationInPublic is returned when asked to send or accept
// application data as a PublicMessage, which RFC 9420 Section 6.2 forbids.
var errApplicationInPublic = errors.New("mls: application data must be sent as a PrivateMessage")

// ProtectPublic signs content and, for a member sender, adds the membership
// tag (RFC 9420, Section 6.2). confirmationTag is required for a commit and
// ignored otherwise. Application content is refused: RFC 9420 Section 6
// requires it to be encrypted.
func (p *Protector) ProtectPublic(content *FramedContent, priv ed25519.PrivateKey, confirmationTag []byte) (*PublicMessage, error) {
	if content.ContentType == ContentTypeApplication {
		return nil, errApplicationInPublic
	}
	if err := p.checkEpoch(content.GroupID, content.Epoch); err != nil {
		return nil, err
	}
	sig, err := p.sign(WireFormatPublicMessage, content, priv)
	if err != nil {
		return nil, err
	}
	m := &PublicMessage{Content: *content, Auth: FramedContentAuthData{Signature: sig}}
	if content.ContentType == ContentTypeCommit {
		if len(confirmationTag) == 0 {
			return nil, errors.New("mls: a commit needs a confirmation tag")
		}
		m.Auth.ConfirmationTag = append([]byte{}, confirmationTag...)
	}
	if content.Sender.Type == SenderTypeMember {
		if m.MembershipTag, err = p.membershipTag(&m.Content, &m.Auth); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// UnprotectPublic checks a PublicMessage of this epoch: the membership tag
// for a member sender (RFC 9420, Section 6.2) and the signature against
// signerPub, the key the sender type designates (Section 6.1), which the
// caller looks up. It returns the AuthenticatedContent. A wrong membership
// tag returns ErrDecryption (opaque, as for any MAC failure); a wrong
// signature ErrInvalidSignature; another group or epoch ErrWrongGroup or
// ErrEpochMismatch. The confirmation tag of a commit is checked by the
// commit processing, which knows the next epoch's key.
func (p *Protector) UnprotectPublic(m *PublicMessage, signerPub []byte) (*AuthenticatedContent, error) {
	if err := p.checkEpoch(m.Content.GroupID, m.Content.Epoch); err != nil {
		return nil, err
	}
	if m.Content.ContentType == ContentTypeApplication {
		return nil, errApplicationInPublic
	}
	if m.Content.ContentType == ContentTypeCommit && len(m.Auth.ConfirmationTag) == 0 {
		return nil, ErrInvalidCommit
	}
	if m.Content.Sender.Type == SenderTypeMember {
		tag, err := p.membershipTag(&m.Content, &m.Auth)
		if err != nil {
			return nil, err
		}
		if !hmac.Equal(tag, m.MembershipTag) {
			return nil, ErrDecryption
		}
	}
	if err := p.verify(WireFormatPublicMessage, &m.Content, signerPub, m.Auth.Signature); err != nil {
		return nil, err
	}
	return &AuthenticatedContent{WireFormat: WireFormatPublicMessage, Content: m.Content, Auth: m.Auth}, nil
}

func marshalAuth(a *FramedContentAuthData, ct ContentType) ([]byte, error) {
	var b cryptobyte.Builder
	a.marshal(&b, ct)
	return b.Bytes()
}
