package mls

// Registry values of RFC 9420, Section 17. Values outside the constants
// below are legal on the wire wherever the RFC says unknown values must be
// ignored (capabilities, extensions); GREASE values (Section 13.5) are just
// such unknown values.

// ProtocolVersion is the MLS protocol version (RFC 9420, Section 6).
type ProtocolVersion uint16

// ProtocolMLS10 is mls10, the only version (RFC 9420, Section 6).
const ProtocolMLS10 ProtocolVersion = 1

// CipherSuite identifies an MLS cipher suite (RFC 9420, Section 17.1).
type CipherSuite uint16

// CipherSuiteX25519AES128SHA256Ed25519 is
// MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519 (0x0001), the only suite
// this package implements (RFC 9420, Section 17.1).
const CipherSuiteX25519AES128SHA256Ed25519 CipherSuite = 1

// WireFormat says which message an MLSMessage carries (RFC 9420, Section
// 17.2).
type WireFormat uint16

// Wire formats (RFC 9420, Sections 6 and 17.2).
const (
	WireFormatPublicMessage  WireFormat = 1
	WireFormatPrivateMessage WireFormat = 2
	WireFormatWelcome        WireFormat = 3
	WireFormatGroupInfo      WireFormat = 4
	WireFormatKeyPackage     WireFormat = 5
)

// ContentType is the type of a FramedContent (RFC 9420, Section 6).
type ContentType uint8

// Content types (RFC 9420, Section 6).
const (
	ContentTypeApplication ContentType = 1
	ContentTypeProposal    ContentType = 2
	ContentTypeCommit      ContentType = 3
)

// SenderType is the kind of sender of a FramedContent (RFC 9420, Section 6).
type SenderType uint8

// Sender types (RFC 9420, Section 6).
const (
	SenderTypeMember            SenderType = 1
	SenderTypeExternal          SenderType = 2
	SenderTypeNewMemberProposal SenderType = 3
	SenderTypeNewMemberCommit   SenderType = 4
)

// ExtensionType identifies an extension (RFC 9420, Section 17.3).
type ExtensionType uint16

// Extension types defined by RFC 9420. They are the "default" extensions
// that capabilities never list (Section 7.2).
const (
	ExtensionTypeApplicationID        ExtensionType = 1
	ExtensionTypeRatchetTree          ExtensionType = 2
	ExtensionTypeRequiredCapabilities ExtensionType = 3
	ExtensionTypeExternalPub          ExtensionType = 4
	ExtensionTypeExternalSenders      ExtensionType = 5
)

// ProposalType identifies a proposal (RFC 9420, Section 17.4).
type ProposalType uint16

// Proposal types defined by RFC 9420, the "default" proposals (Sections
// 12.1 and 17.4).
const (
	ProposalTypeAdd                    ProposalType = 1
	ProposalTypeUpdate                 ProposalType = 2
	ProposalTypeRemove                 ProposalType = 3
	ProposalTypePSK                    ProposalType = 4
	ProposalTypeReInit                 ProposalType = 5
	ProposalTypeExternalInit           ProposalType = 6
	ProposalTypeGroupContextExtensions ProposalType = 7
)

// CredentialType identifies a credential (RFC 9420, Section 17.5).
type CredentialType uint16

// Credential types (RFC 9420, Sections 5.3 and 17.5).
const (
	CredentialTypeBasic CredentialType = 1
	CredentialTypeX509  CredentialType = 2
)

// isDefaultExtension reports whether t is one of RFC 9420's own extensions,
// which capabilities need not list (Section 7.2).
func isDefaultExtension(t ExtensionType) bool { return t >= 1 && t <= 5 }

// isDefaultProposal reports whether t is one of RFC 9420's own proposals.
func isDefaultProposal(t ProposalType) bool { return t >= 1 && t <= 7 }
