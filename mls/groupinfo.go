package mls

import (
	"golang.org/x/crypto/cryptobyte"
)

// GroupInfo describes a group to a joiner (RFC 9420, Section 12.4.3). This
// file holds the structure and its codec; signing, verification and use are
// in the Welcome and external-join code.
type GroupInfo struct {
	GroupContext    GroupContext
	Extensions      []Extension
	ConfirmationTag []byte
	Signer          uint32
	Signature       []byte
}

func (g *GroupInfo) marshalTBS(b *cryptobyte.Builder) {
	g.GroupContext.marshal(b)
	addExtensions(b, g.Extensions)
	addOpaque(b, g.ConfirmationTag)
	b.AddUint32(g.Signer)
}

func (g *GroupInfo) marshal(b *cryptobyte.Builder) {
	g.marshalTBS(b)
	addOpaque(b, g.Signature)
}

func (g *GroupInfo) unmarshal(d *decoder) bool {
	*g = GroupInfo{}
	return d.sub("group_context", g.GroupContext.unmarshal) && readExtensions(d, &g.Extensions) &&
		d.opaque("confirmation_tag", &g.ConfirmationTag) && d.u32("signer", &g.Signer) &&
		d.opaque("signature", &g.Signature)
}

// TBS returns the GroupInfoTBS encoding, the content GroupInfo signatures
// cover (label "GroupInfoTBS"; RFC 9420, Section 12.4.3).
func (g *GroupInfo) TBS() []byte {
	var b cryptobyte.Builder
	g.marshalTBS(&b)
	return b.BytesOrPanic()
}

// Marshal returns the encoding of the GroupInfo (RFC 9420, Section
// 12.4.3), without an MLSMessage wrapper.
func (g *GroupInfo) Marshal() []byte { return encode(g) }

// ParseGroupInfo decodes a GroupInfo (RFC 9420, Section 12.4.3) without an
// MLSMessage wrapper.
func ParseGroupInfo(data []byte) (*GroupInfo, error) {
	var g GroupInfo
	if err := decodeAll(data, &g, "GroupInfo"); err != nil {
		return nil, err
	}
	return &g, nil
}
