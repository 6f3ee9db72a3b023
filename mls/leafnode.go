package mls

import (
	"golang.org/x/crypto/cryptobyte"
)

// LeafNodeSource says how a LeafNode entered the tree (RFC 9420, Section
// 7.2).
type LeafNodeSource uint8

// Leaf node sources (RFC 9420, Section 7.2).
const (
	LeafNodeSourceKeyPackage LeafNodeSource = 1
	LeafNodeSourceUpdate     LeafNodeSource = 2
	LeafNodeSourceCommit     LeafNodeSource = 3
)

// Capabilities lists what a client supports (RFC 9420, Section 7.2).
// Unknown values, GREASE among them, are kept and ignored.
type Capabilities struct {
	Versions     []ProtocolVersion
	CipherSuites []CipherSuite
	Extensions   []ExtensionType
	Proposals    []ProposalType
	Credentials  []CredentialType
}

func (c *Capabilities) marshal(b *cryptobyte.Builder) {
	addUint16s(b, c.Versions)
	addUint16s(b, c.CipherSuites)
	addUint16s(b, c.Extensions)
	addUint16s(b, c.Proposals)
	addUint16s(b, c.Credentials)
}

func (c *Capabilities) unmarshal(d *decoder) bool {
	return readUint16s(d, "versions", &c.Versions) &&
		readUint16s(d, "cipher_suites", &c.CipherSuites) &&
		readUint16s(d, "extensions", &c.Extensions) &&
		readUint16s(d, "proposals", &c.Proposals) &&
		readUint16s(d, "credentials", &c.Credentials)
}

// Lifetime bounds the validity of a KeyPackage's LeafNode, in seconds since
// the Unix epoch (RFC 9420, Section 7.2).
type Lifetime struct {
	NotBefore uint64
	NotAfter  uint64
}

// A LeafNode describes a member at a leaf of the ratchet tree (RFC 9420,
// Section 7.2). Lifetime is set for LeafNodeSourceKeyPackage, ParentHash for
// LeafNodeSourceCommit.
type LeafNode struct {
	EncryptionKey []byte
	SignatureKey  []byte
	Credential    Credential
	Capabilities  Capabilities
	Source        LeafNodeSource
	Lifetime      Lifetime // LeafNodeSourceKeyPackage
	ParentHash    []byte   // LeafNodeSourceCommit
	Extensions    []Extension
	Signature     []byte
}

// marshalTBSFields writes the fields of LeafNode and LeafNodeTBS that come
// before the signature (and the TBS-only group context).
func (l *LeafNode) marshalTBSFields(b *cryptobyte.Builder) {
	addOpaque(b, l.EncryptionKey)
	addOpaque(b, l.SignatureKey)
	l.Credential.marshal(b)
	l.Capabilities.marshal(b)
	b.AddUint8(uint8(l.Source))
	switch l.Source {
	case LeafNodeSourceKeyPackage:
		b.AddUint64(l.Lifetime.NotBefore)
		b.AddUint64(l.Lifetime.NotAfter)
	case LeafNodeSourceCommit:
		addOpaque(b, l.ParentHash)
	}
	addExtensions(b, l.Extensions)
}

func (l *LeafNode) marshal(b *cryptobyte.Builder) {
	l.marshalTBSFields(b)
	addOpaque(b, l.Signature)
}

func (l *LeafNode) unmarshal(d *decoder) bool {
	*l = LeafNode{}
	if !d.opaque("encryption_key", &l.EncryptionKey) || !d.opaque("signature_key", &l.SignatureKey) ||
		!d.sub("credential", l.Credential.unmarshal) || !d.sub("capabilities", l.Capabilities.unmarshal) ||
		!d.u8("leaf_node_source", (*uint8)(&l.Source)) {
		return false
	}
	switch l.Source {
	case LeafNodeSourceKeyPackage:
		if !d.u64("lifetime.not_before", &l.Lifetime.NotBefore) || !d.u64("lifetime.not_after", &l.Lifetime.NotAfter) {
			return false
		}
	case LeafNodeSourceUpdate:
	case LeafNodeSourceCommit:
		if !d.opaque("parent_hash", &l.ParentHash) {
			return false
		}
	default:
		return d.reject("leaf_node_source", "unknown value %d", l.Source)
	}
	return readExtensions(d, &l.Extensions) && d.opaque("signature", &l.Signature)
}

// tbs returns the LeafNodeTBS encoding. groupID and leaf are used for the
// update and commit sources only (RFC 9420, Section 7.2).
func (l *LeafNode) tbs(groupID []byte, leaf uint32) []byte {
	var b cryptobyte.Builder
	l.marshalTBSFields(&b)
	switch l.Source {
	case LeafNodeSourceUpdate, LeafNodeSourceCommit:
		addOpaque(&b, groupID)
		b.AddUint32(leaf)
	}
	return b.BytesOrPanic()
}

// clone returns a deep copy of l.
func (l *LeafNode) clone() *LeafNode {
	var c LeafNode
	if err := decodeAll(encode(l), &c, "LeafNode"); err != nil {
		panic("mls: LeafNode does not round-trip: " + err.Error())
	}
	return &c
}
