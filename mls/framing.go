package mls

import (
	"golang.org/x/crypto/cryptobyte"
)

// This file holds the framing structures of RFC 9420, Section 6, and their
// codecs. Protecting and unprotecting them (signatures, membership tags,
// encryption) is in protect*.go.

// Sender identifies who sent a FramedContent (RFC 9420, Section 6). Index is
// the leaf_index of a member or the sender_index of an external sender.
type Sender struct {
	Type  SenderType
	Index uint32
}

func (s *Sender) marshal(b *cryptobyte.Builder) {
	b.AddUint8(uint8(s.Type))
	switch s.Type {
	case SenderTypeMember, SenderTypeExternal:
		b.AddUint32(s.Index)
	}
}

func (s *Sender) unmarshal(d *decoder) bool {
	*s = Sender{}
	if !d.u8("sender_type", (*uint8)(&s.Type)) {
		return false
	}
	switch s.Type {
	case SenderTypeMember:
		return d.u32("leaf_index", &s.Index)
	case SenderTypeExternal:
		return d.u32("sender_index", &s.Index)
	case SenderTypeNewMemberProposal, SenderTypeNewMemberCommit:
		return true
	}
	return d.reject("sender_type", "unknown value %d", s.Type)
}

// FramedContent is the content of a handshake or application message (RFC
// 9420, Section 6). Exactly one of ApplicationData, Proposal and Commit is
// meaningful, as ContentType says.
type FramedContent struct {
	GroupID           []byte
	Epoch             uint64
	Sender            Sender
	AuthenticatedData []byte
	ContentType       ContentType
	ApplicationData   []byte   // ContentTypeApplication
	Proposal          Proposal // ContentTypeProposal
	Commit            *Commit  // ContentTypeCommit
}

func (f *FramedContent) marshal(b *cryptobyte.Builder) {
	addOpaque(b, f.GroupID)
	b.AddUint64(f.Epoch)
	f.Sender.marshal(b)
	addOpaque(b, f.AuthenticatedData)
	b.AddUint8(uint8(f.ContentType))
	f.marshalBody(b)
}

// marshalBody writes the select on content_type, shared by FramedContent and
// PrivateMessageContent.
func (f *FramedContent) marshalBody(b *cryptobyte.Builder) {
	switch f.ContentType {
	case ContentTypeApplication:
		addOpaque(b, f.ApplicationData)
	case ContentTypeProposal:
		marshalProposal(b, f.Proposal)
	case ContentTypeCommit:
		f.Commit.marshal(b)
	default:
		b.SetError(errorf("FramedContent", "content type %d", f.ContentType))
	}
}

func (f *FramedContent) unmarshal(d *decoder) bool {
	*f = FramedContent{}
	return d.opaque("group_id", &f.GroupID) && d.u64("epoch", &f.Epoch) &&
		d.sub("sender", f.Sender.unmarshal) && d.opaque("authenticated_data", &f.AuthenticatedData) &&
		d.u8("content_type", (*uint8)(&f.ContentType)) && f.unmarshalBody(d)
}

// unmarshalBody reads the select on f.ContentType.
func (f *FramedContent) unmarshalBody(d *decoder) bool {
	switch f.ContentType {
	case ContentTypeApplication:
		return d.opaque("application_data", &f.ApplicationData)
	case ContentTypeProposal:
		return d.sub("proposal", func(d *decoder) bool { return readProposal(d, &f.Proposal) })
	case ContentTypeCommit:
		f.Commit = new(Commit)
		return d.sub("commit", f.Commit.unmarshal)
	}
	return d.reject("content_type", "unknown value %d", f.ContentType)
}

// FramedContentAuthData authenticates a FramedContent: its signature and,
// for commits, the confirmation tag (RFC 9420, Section 6.1).
type FramedContentAuthData struct {
	Signature       []byte
	ConfirmationTag []byte // ContentTypeCommit only
}

func (a *FramedContentAuthData) marshal(b *cryptobyte.Builder, ct ContentType) {
	addOpaque(b, a.Signature)
	if ct == ContentTypeCommit {
		addOpaque(b, a.ConfirmationTag)
	}
}

func (a *FramedContentAuthData) unmarshal(d *decoder, ct ContentType) bool {
	*a = FramedContentAuthData{}
	if !d.opaque("signature", &a.Signature) {
		return false
	}
	if ct == ContentTypeCommit {
		return d.opaque("confirmation_tag", &a.ConfirmationTag)
	}
	return true
}

// AuthenticatedContent is a FramedContent with its authentication and the
// wire format it travels in (RFC 9420, Section 6).
type AuthenticatedContent struct {
	WireFormat WireFormat
	Content    FramedContent
	Auth       FramedContentAuthData
}

func (a *AuthenticatedContent) marshal(b *cryptobyte.Builder) {
	b.AddUint16(uint16(a.WireFormat))
	a.Content.marshal(b)
	a.Auth.marshal(b, a.Content.ContentType)
}

func (a *AuthenticatedContent) unmarshal(d *decoder) bool {
	*a = AuthenticatedContent{}
	return d.u16("wire_format", (*uint16)(&a.WireFormat)) && d.sub("content", a.Content.unmarshal) &&
		d.sub("auth", func(d *decoder) bool { return a.Auth.unmarshal(d, a.Content.ContentType) })
}

// Marshal returns the encoding of the AuthenticatedContent (RFC 9420,
// Section 6), the value a ProposalRef hashes (Section 5.2).
func (a *AuthenticatedContent) Marshal() []byte { return encode(a) }

// ParseAuthenticatedContent decodes an AuthenticatedContent (RFC 9420,
// Section 6).
func ParseAuthenticatedContent(data []byte) (*AuthenticatedContent, error) {
	var a AuthenticatedContent
	if err := decodeAll(data, &a, "AuthenticatedContent"); err != nil {
		return nil, err
	}
	return &a, nil
}

// ConfirmedTranscriptHashInput returns the encoding of
// ConfirmedTranscriptHashInput for a commit (RFC 9420, Section 8.2):
// wire_format, content and signature.
func (a *AuthenticatedContent) ConfirmedTranscriptHashInput() []byte {
	var b cryptobyte.Builder
	b.AddUint16(uint16(a.WireFormat))
	a.Content.marshal(&b)
	addOpaque(&b, a.Auth.Signature)
	return b.BytesOrPanic()
}

// FramedContentTBS returns the content a FramedContent signature covers
// (RFC 9420, Section 6.1): version, wire format, content and, for member and
// new_member_commit senders, the GroupContext ctx.
func FramedContentTBS(wf WireFormat, content *FramedContent, ctx *GroupContext) []byte {
	var b cryptobyte.Builder
	b.AddUint16(uint16(ProtocolMLS10))
	b.AddUint16(uint16(wf))
	content.marshal(&b)
	switch content.Sender.Type {
	case SenderTypeMember, SenderTypeNewMemberCommit:
		ctx.marshal(&b)
	}
	return b.BytesOrPanic()
}

// PublicMessage is a signed, unencrypted handshake or application message
// (RFC 9420, Section 6.2). MembershipTag is present for member senders.
type PublicMessage struct {
	Content       FramedContent
	Auth          FramedContentAuthData
	MembershipTag []byte
}

func (p *PublicMessage) marshal(b *cryptobyte.Builder) {
	p.Content.marshal(b)
	p.Auth.marshal(b, p.Content.ContentType)
	if p.Content.Sender.Type == SenderTypeMember {
		addOpaque(b, p.MembershipTag)
	}
}

func (p *PublicMessage) unmarshal(d *decoder) bool {
	*p = PublicMessage{}
	if !d.sub("content", p.Content.unmarshal) ||
		!d.sub("auth", func(d *decoder) bool { return p.Auth.unmarshal(d, p.Content.ContentType) }) {
		return false
	}
	if p.Content.Sender.Type == SenderTypeMember {
		return d.opaque("membership_tag", &p.MembershipTag)
	}
	return true
}

// PrivateMessage is an encrypted message (RFC 9420, Section 6.3).
type PrivateMessage struct {
	GroupID             []byte
	Epoch               uint64
	ContentType         ContentType
	AuthenticatedData   []byte
	EncryptedSenderData []byte
	Ciphertext          []byte
}

func (p *PrivateMessage) marshal(b *cryptobyte.Builder) {
	addOpaque(b, p.GroupID)
	b.AddUint64(p.Epoch)
	b.AddUint8(uint8(p.ContentType))
	addOpaque(b, p.AuthenticatedData)
	addOpaque(b, p.EncryptedSenderData)
	addOpaque(b, p.Ciphertext)
}

func (p *PrivateMessage) unmarshal(d *decoder) bool {
	*p = PrivateMessage{}
	if !d.opaque("group_id", &p.GroupID) || !d.u64("epoch", &p.Epoch) ||
		!d.u8("content_type", (*uint8)(&p.ContentType)) {
		return false
	}
	switch p.ContentType {
	case ContentTypeApplication, ContentTypeProposal, ContentTypeCommit:
	default:
		return d.reject("content_type", "unknown value %d", p.ContentType)
	}
	return d.opaque("authenticated_data", &p.AuthenticatedData) &&
		d.opaque("encrypted_sender_data", &p.EncryptedSenderData) && d.opaque("ciphertext", &p.Ciphertext)
}

// SenderData is the encrypted header of a PrivateMessage (RFC 9420, Section
// 6.3.2).
type SenderData struct {
	LeafIndex  uint32
	Generation uint32
	ReuseGuard [4]byte
}

func (d *SenderData) marshal(b *cryptobyte.Builder) {
	b.AddUint32(d.LeafIndex)
	b.AddUint32(d.Generation)
	b.AddBytes(d.ReuseGuard[:])
}

func (sd *SenderData) unmarshal(d *decoder) bool {
	return d.u32("leaf_index", &sd.LeafIndex) && d.u32("generation", &sd.Generation) &&
		d.fixed("reuse_guard", sd.ReuseGuard[:])
}

// MLSMessage is the envelope of every MLS message on the wire (RFC 9420,
// Section 6). Exactly one of the pointers is set, as WireFormat says.
type MLSMessage struct {
	Version        ProtocolVersion
	WireFormat     WireFormat
	PublicMessage  *PublicMessage
	PrivateMessage *PrivateMessage
	Welcome        *Welcome
	GroupInfo      *GroupInfo
	KeyPackage     *KeyPackage
}

func (m *MLSMessage) marshal(b *cryptobyte.Builder) {
	b.AddUint16(uint16(m.Version))
	b.AddUint16(uint16(m.WireFormat))
	switch m.WireFormat {
	case WireFormatPublicMessage:
		m.PublicMessage.marshal(b)
	case WireFormatPrivateMessage:
		m.PrivateMessage.marshal(b)
	case WireFormatWelcome:
		m.Welcome.marshal(b)
	case WireFormatGroupInfo:
		m.GroupInfo.marshal(b)
	case WireFormatKeyPackage:
		m.KeyPackage.marshal(b)
	default:
		b.SetError(errorf("MLSMessage", "wire format %d", m.WireFormat))
	}
}

func (m *MLSMessage) unmarshal(d *decoder) bool {
	*m = MLSMessage{}
	if !readVersion(d, "version", &m.Version) {
		return false
	}
	if m.Version != ProtocolMLS10 {
		return d.reject("version", "unsupported version %d", m.Version)
	}
	if !d.u16("wire_format", (*uint16)(&m.WireFormat)) {
		return false
	}
	switch m.WireFormat {
	case WireFormatPublicMessage:
		m.PublicMessage = new(PublicMessage)
		return d.sub("public_message", m.PublicMessage.unmarshal)
	case WireFormatPrivateMessage:
		m.PrivateMessage = new(PrivateMessage)
		return d.sub("private_message", m.PrivateMessage.unmarshal)
	case WireFormatWelcome:
		m.Welcome = new(Welcome)
		return d.sub("welcome", m.Welcome.unmarshal)
	case WireFormatGroupInfo:
		m.GroupInfo = new(GroupInfo)
		return d.sub("group_info", m.GroupInfo.unmarshal)
	case WireFormatKeyPackage:
		m.KeyPackage = new(KeyPackage)
		return d.sub("key_package", m.KeyPackage.unmarshal)
	}
	return d.reject("wire_format", "unknown value %d", m.WireFormat)
}

// Marshal returns the encoding of the MLSMessage (RFC 9420, Section 6). It
// fails only for a message whose wire format or content type is not one of
// RFC 9420's.
func (m *MLSMessage) Marshal() ([]byte, error) {
	var b cryptobyte.Builder
	m.marshal(&b)
	return b.Bytes()
}

// ParseMLSMessage decodes an MLSMessage. Only mls10 is accepted; a
// KeyPackage inside must carry the same version (RFC 9420, Section 10).
func ParseMLSMessage(data []byte) (*MLSMessage, error) {
	var m MLSMessage
	if err := decodeAll(data, &m, "MLSMessage"); err != nil {
		return nil, err
	}
	if m.KeyPackage != nil && m.KeyPackage.Version != m.Version {
		return nil, errorf("MLSMessage", "KeyPackage version %d inside an mls10 message", m.KeyPackage.Version)
	}
	return &m, nil
}
