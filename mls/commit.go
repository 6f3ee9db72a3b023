package mls

import (
	"golang.org/x/crypto/cryptobyte"
)

// ProposalOrRefType says whether a Commit carries a proposal by value or by
// reference (RFC 9420, Section 12.4).
type ProposalOrRefType uint8

// ProposalOrRef types (RFC 9420, Section 12.4).
const (
	ProposalOrRefProposal  ProposalOrRefType = 1
	ProposalOrRefReference ProposalOrRefType = 2
)

// A ProposalOrRef is a proposal in a Commit: by value (Proposal set) or by
// reference (Reference set, a ProposalRef; RFC 9420, Sections 5.2 and 12.4).
type ProposalOrRef struct {
	Proposal  Proposal
	Reference []byte
}

func (p *ProposalOrRef) marshal(b *cryptobyte.Builder) {
	if p.Proposal != nil {
		b.AddUint8(uint8(ProposalOrRefProposal))
		marshalProposal(b, p.Proposal)
		return
	}
	b.AddUint8(uint8(ProposalOrRefReference))
	addOpaque(b, p.Reference)
}

func (p *ProposalOrRef) unmarshal(d *decoder) bool {
	*p = ProposalOrRef{}
	var t uint8
	if !d.u8("type", &t) {
		return false
	}
	switch ProposalOrRefType(t) {
	case ProposalOrRefProposal:
		return d.sub("proposal", func(d *decoder) bool { return readProposal(d, &p.Proposal) })
	case ProposalOrRefReference:
		return d.opaque("reference", &p.Reference)
	}
	return d.reject("type", "unknown value %d", t)
}

// A Commit moves the group to a new epoch (RFC 9420, Section 12.4).
type Commit struct {
	Proposals []ProposalOrRef
	Path      *UpdatePath
}

func (c *Commit) marshal(b *cryptobyte.Builder) {
	addVector(b, func(b *cryptobyte.Builder) {
		for i := range c.Proposals {
			c.Proposals[i].marshal(b)
		}
	})
	addOptional(b, c.Path != nil, func(b *cryptobyte.Builder) { c.Path.marshal(b) })
}

func (c *Commit) unmarshal(d *decoder) bool {
	*c = Commit{}
	if !d.vector("proposals", func(d *decoder) bool {
		var p ProposalOrRef
		if !p.unmarshal(d) {
			return false
		}
		c.Proposals = append(c.Proposals, p)
		return true
	}) {
		return false
	}
	var present bool
	if !d.optional("path", &present) {
		return false
	}
	if present {
		c.Path = new(UpdatePath)
		return d.sub("path", c.Path.unmarshal)
	}
	return true
}

// HPKECiphertext is an HPKE encapsulated key and ciphertext (RFC 9420,
// Section 7.6).
type HPKECiphertext struct {
	KEMOutput  []byte
	Ciphertext []byte
}

func (h *HPKECiphertext) marshal(b *cryptobyte.Builder) {
	addOpaque(b, h.KEMOutput)
	addOpaque(b, h.Ciphertext)
}

func (h *HPKECiphertext) unmarshal(d *decoder) bool {
	return d.opaque("kem_output", &h.KEMOutput) && d.opaque("ciphertext", &h.Ciphertext)
}

// UpdatePathNode is one node of an UpdatePath: the new public key and the
// path secret encrypted to each node of the copath child's resolution (RFC
// 9420, Section 7.6).
type UpdatePathNode struct {
	EncryptionKey       []byte
	EncryptedPathSecret []HPKECiphertext
}

func (n *UpdatePathNode) marshal(b *cryptobyte.Builder) {
	addOpaque(b, n.EncryptionKey)
	addVector(b, func(b *cryptobyte.Builder) {
		for i := range n.EncryptedPathSecret {
			n.EncryptedPathSecret[i].marshal(b)
		}
	})
}

func (n *UpdatePathNode) unmarshal(d *decoder) bool {
	*n = UpdatePathNode{}
	return d.opaque("encryption_key", &n.EncryptionKey) && d.vector("encrypted_path_secret", func(d *decoder) bool {
		var c HPKECiphertext
		if !c.unmarshal(d) {
			return false
		}
		n.EncryptedPathSecret = append(n.EncryptedPathSecret, c)
		return true
	})
}

// An UpdatePath is the committer's new leaf and the new keys of its
// filtered direct path (RFC 9420, Section 7.6).
type UpdatePath struct {
	LeafNode LeafNode
	Nodes    []UpdatePathNode
}

func (u *UpdatePath) marshal(b *cryptobyte.Builder) {
	u.LeafNode.marshal(b)
	addVector(b, func(b *cryptobyte.Builder) {
		for i := range u.Nodes {
			u.Nodes[i].marshal(b)
		}
	})
}

func (u *UpdatePath) unmarshal(d *decoder) bool {
	*u = UpdatePath{}
	return d.sub("leaf_node", u.LeafNode.unmarshal) && d.vector("nodes", func(d *decoder) bool {
		var n UpdatePathNode
		if !n.unmarshal(d) {
			return false
		}
		u.Nodes = append(u.Nodes, n)
		return true
	})
}

// Marshal returns the encoding of the Commit (RFC 9420, Section 12.4).
func (c *Commit) Marshal() []byte { return encode(c) }

// ParseCommit decodes a Commit (RFC 9420, Section 12.4).
func ParseCommit(data []byte) (*Commit, error) {
	var c Commit
	if err := decodeAll(data, &c, "Commit"); err != nil {
		return nil, err
	}
	return &c, nil
}

// Marshal returns the encoding of the UpdatePath (RFC 9420, Section 7.6).
func (u *UpdatePath) Marshal() []byte { return encode(u) }

// ParseUpdatePath decodes an UpdatePath (RFC 9420, Section 7.6).
func ParseUpdatePath(data []byte) (*UpdatePath, error) {
	var u UpdatePath
	if err := decodeAll(data, &u, "UpdatePath"); err != nil {
		return nil, err
	}
	return &u, nil
}
