package mls

import (
	"bytes"

	"golang.org/x/crypto/cryptobyte"
)

// GroupContext summarises the state of a group in an epoch (RFC 9420,
// Section 8.1).
type GroupContext struct {
	Version                 ProtocolVersion
	CipherSuite             CipherSuite
	GroupID                 []byte
	Epoch                   uint64
	TreeHash                []byte
	ConfirmedTranscriptHash []byte
	Extensions              []Extension
}

func (g *GroupContext) marshal(b *cryptobyte.Builder) {
	b.AddUint16(uint16(g.Version))
	b.AddUint16(uint16(g.CipherSuite))
	addOpaque(b, g.GroupID)
	b.AddUint64(g.Epoch)
	addOpaque(b, g.TreeHash)
	addOpaque(b, g.ConfirmedTranscriptHash)
	addExtensions(b, g.Extensions)
}

func (g *GroupContext) unmarshal(d *decoder) bool {
	*g = GroupContext{}
	return readVersion(d, "version", &g.Version) && readCipherSuite(d, "cipher_suite", &g.CipherSuite) &&
		d.opaque("group_id", &g.GroupID) && d.u64("epoch", &g.Epoch) &&
		d.opaque("tree_hash", &g.TreeHash) && d.opaque("confirmed_transcript_hash", &g.ConfirmedTranscriptHash) &&
		readExtensions(d, &g.Extensions)
}

// Marshal returns the encoding of the GroupContext, the context of
// signatures, HPKE encryptions and the key schedule (RFC 9420, Section
// 8.1).
func (g *GroupContext) Marshal() []byte { return encode(g) }

// ParseGroupContext decodes a GroupContext (RFC 9420, Section 8.1).
func ParseGroupContext(data []byte) (*GroupContext, error) {
	var g GroupContext
	if err := decodeAll(data, &g, "GroupContext"); err != nil {
		return nil, err
	}
	return &g, nil
}

// clone returns a deep copy of g.
func (g *GroupContext) clone() *GroupContext {
	c := *g
	c.GroupID = bytes.Clone(g.GroupID)
	c.TreeHash = bytes.Clone(g.TreeHash)
	c.ConfirmedTranscriptHash = bytes.Clone(g.ConfirmedTranscriptHash)
	c.Extensions = cloneExtensions(g.Extensions)
	return &c
}
