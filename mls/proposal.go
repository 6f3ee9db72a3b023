package mls

import (
	"golang.org/x/crypto/cryptobyte"
)

// A Proposal is one of *AddProposal, *UpdateProposal, *RemoveProposal,
// *PreSharedKeyProposal, *ReInitProposal, *ExternalInitProposal,
// *GroupContextExtensionsProposal or *UnknownProposal (RFC 9420, Section
// 12.1). The set is closed.
type Proposal interface {
	// ProposalType returns the proposal's type on the wire.
	ProposalType() ProposalType
	marshalBody(b *cryptobyte.Builder)
}

// AddProposal asks to add the client of a KeyPackage (RFC 9420, Section
// 12.1.1).
type AddProposal struct {
	KeyPackage KeyPackage
}

// UpdateProposal replaces the sender's LeafNode (RFC 9420, Section 12.1.2).
type UpdateProposal struct {
	LeafNode LeafNode
}

// RemoveProposal removes the member at leaf index Removed (RFC 9420,
// Section 12.1.3).
type RemoveProposal struct {
	Removed uint32
}

// PreSharedKeyProposal injects a PSK into the next epoch (RFC 9420, Section
// 12.1.4).
type PreSharedKeyProposal struct {
	PSK PreSharedKeyID
}

// ReInitProposal asks to reinitialise the group with new parameters (RFC
// 9420, Section 12.1.5).
type ReInitProposal struct {
	GroupID     []byte
	Version     ProtocolVersion
	CipherSuite CipherSuite
	Extensions  []Extension
}

// ExternalInitProposal carries the KEM output of an external joiner (RFC
// 9420, Section 12.1.6).
type ExternalInitProposal struct {
	KEMOutput []byte
}

// GroupContextExtensionsProposal replaces the GroupContext extensions (RFC
// 9420, Section 12.1.7).
type GroupContextExtensionsProposal struct {
	Extensions []Extension
}

// UnknownProposal is a proposal of a type this package does not implement,
// such as one registered later (RFC 9420, Sections 13.2 and 17.4) or a
// GREASE value (Section 13.5); its body is carried as opaque<V> (see the
// codec notes in codec.go).
type UnknownProposal struct {
	Type ProposalType
	Data []byte
}

// ProposalType implements Proposal (RFC 9420, Section 12.1.1).
func (*AddProposal) ProposalType() ProposalType { return ProposalTypeAdd }

// ProposalType implements Proposal (RFC 9420, Section 12.1.2).
func (*UpdateProposal) ProposalType() ProposalType { return ProposalTypeUpdate }

// ProposalType implements Proposal (RFC 9420, Section 12.1.3).
func (*RemoveProposal) ProposalType() ProposalType { return ProposalTypeRemove }

// ProposalType implements Proposal (RFC 9420, Section 12.1.4).
func (*PreSharedKeyProposal) ProposalType() ProposalType { return ProposalTypePSK }

// ProposalType implements Proposal (RFC 9420, Section 12.1.5).
func (*ReInitProposal) ProposalType() ProposalType { return ProposalTypeReInit }

// ProposalType implements Proposal (RFC 9420, Section 12.1.6).
func (*ExternalInitProposal) ProposalType() ProposalType { return ProposalTypeExternalInit }

// ProposalType implements Proposal (RFC 9420, Section 12.1.7).
func (*GroupContextExtensionsProposal) ProposalType() ProposalType {
	return ProposalTypeGroupContextExtensions
}

// ProposalType implements Proposal: the type read from the wire (RFC 9420,
// Section 12.1).
func (p *UnknownProposal) ProposalType() ProposalType { return p.Type }

func (p *AddProposal) marshalBody(b *cryptobyte.Builder)    { p.KeyPackage.marshal(b) }
func (p *UpdateProposal) marshalBody(b *cryptobyte.Builder) { p.LeafNode.marshal(b) }
func (p *RemoveProposal) marshalBody(b *cryptobyte.Builder) { b.AddUint32(p.Removed) }
func (p *PreSharedKeyProposal) marshalBody(b *cryptobyte.Builder) {
	p.PSK.marshal(b)
}

func (p *ReInitProposal) marshalBody(b *cryptobyte.Builder) {
	addOpaque(b, p.GroupID)
	b.AddUint16(uint16(p.Version))
	b.AddUint16(uint16(p.CipherSuite))
	addExtensions(b, p.Extensions)
}

func (p *ExternalInitProposal) marshalBody(b *cryptobyte.Builder) { addOpaque(b, p.KEMOutput) }

func (p *GroupContextExtensionsProposal) marshalBody(b *cryptobyte.Builder) {
	addExtensions(b, p.Extensions)
}

func (p *UnknownProposal) marshalBody(b *cryptobyte.Builder) { addOpaque(b, p.Data) }

// marshalProposal writes a Proposal: its type, then its body.
func marshalProposal(b *cryptobyte.Builder, p Proposal) {
	b.AddUint16(uint16(p.ProposalType()))
	p.marshalBody(b)
}

// readProposal reads a Proposal.
func readProposal(d *decoder, out *Proposal) bool {
	var t ProposalType
	return d.u16("proposal_type", (*uint16)(&t)) && readProposalBody(d, t, out)
}

// readProposalBody reads the body of a proposal of type t.
func readProposalBody(d *decoder, t ProposalType, out *Proposal) bool {
	switch t {
	case ProposalTypeAdd:
		p := new(AddProposal)
		*out = p
		return d.sub("add", func(d *decoder) bool { return d.sub("key_package", p.KeyPackage.unmarshal) })
	case ProposalTypeUpdate:
		p := new(UpdateProposal)
		*out = p
		return d.sub("update", func(d *decoder) bool { return d.sub("leaf_node", p.LeafNode.unmarshal) })
	case ProposalTypeRemove:
		p := new(RemoveProposal)
		*out = p
		return d.sub("remove", func(d *decoder) bool { return d.u32("removed", &p.Removed) })
	case ProposalTypePSK:
		p := new(PreSharedKeyProposal)
		*out = p
		return d.sub("psk", func(d *decoder) bool { return d.sub("psk", p.PSK.unmarshal) })
	case ProposalTypeReInit:
		p := new(ReInitProposal)
		*out = p
		return d.sub("reinit", func(d *decoder) bool {
			return d.opaque("group_id", &p.GroupID) && readVersion(d, "version", &p.Version) &&
				readCipherSuite(d, "cipher_suite", &p.CipherSuite) && readExtensions(d, &p.Extensions)
		})
	case ProposalTypeExternalInit:
		p := new(ExternalInitProposal)
		*out = p
		return d.sub("external_init", func(d *decoder) bool { return d.opaque("kem_output", &p.KEMOutput) })
	case ProposalTypeGroupContextExtensions:
		p := new(GroupContextExtensionsProposal)
		*out = p
		return d.sub("group_context_extensions", func(d *decoder) bool { return readExtensions(d, &p.Extensions) })
	case 0:
		return d.reject("proposal_type", "reserved value 0")
	default:
		p := &UnknownProposal{Type: t}
		*out = p
		// Not an RFC 9420 field: the body of an unknown proposal type,
		// carried as opaque<V> (see codec.go).
		return d.opaque("data", &p.Data)
	}
}

// proposalBox adapts a Proposal to the marshaler/unmarshaler interfaces.
type proposalBox struct{ p Proposal }

func (x *proposalBox) marshal(b *cryptobyte.Builder) { marshalProposal(b, x.p) }
func (x *proposalBox) unmarshal(d *decoder) bool     { return readProposal(d, &x.p) }

// MarshalProposal returns the encoding of p (a Proposal struct, RFC 9420,
// Section 12.1).
func MarshalProposal(p Proposal) []byte { return encode(&proposalBox{p}) }

// ParseProposal decodes a Proposal struct (RFC 9420, Section 12.1).
func ParseProposal(data []byte) (Proposal, error) {
	var x proposalBox
	if err := decodeAll(data, &x, "Proposal"); err != nil {
		return nil, err
	}
	return x.p, nil
}

// proposalBodyBox decodes just the body of a proposal of a known type, as
// the messages vectors store them ("Serialized Add", "Serialized Remove").
type proposalBodyBox struct {
	t ProposalType
	p Proposal
}

func (x *proposalBodyBox) marshal(b *cryptobyte.Builder) { x.p.marshalBody(b) }

func (x *proposalBodyBox) unmarshal(d *decoder) bool {
	return readProposalBody(d, x.t, &x.p)
}

// MarshalProposalBody returns the encoding of p's body without its type
// (the Add, Update, … struct of RFC 9420, Section 12.1).
func MarshalProposalBody(p Proposal) []byte {
	return encode(&proposalBodyBox{t: p.ProposalType(), p: p})
}

// ParseProposalBody decodes the body of a proposal of type t (the Add,
// Update, … struct of RFC 9420, Section 12.1).
func ParseProposalBody(t ProposalType, data []byte) (Proposal, error) {
	x := proposalBodyBox{t: t}
	if err := decodeAll(data, &x, "Proposal"); err != nil {
		return nil, err
	}
	return x.p, nil
}
