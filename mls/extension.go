package mls

import (
	"bytes"
	"fmt"

	"golang.org/x/crypto/cryptobyte"

	"github.com/torpor-dev/torpor/mls/internal/suite"
)

// An Extension is a typed, opaque extension value (RFC 9420, Section 13.4).
// Unknown and GREASE types are kept as they are.
type Extension struct {
	Type ExtensionType
	Data []byte
}

func (e *Extension) marshal(b *cryptobyte.Builder) {
	b.AddUint16(uint16(e.Type))
	addOpaque(b, e.Data)
}

func (e *Extension) unmarshal(d *decoder) bool {
	return d.u16("extension_type", (*uint16)(&e.Type)) && d.opaque("extension_data", &e.Data)
}

// addExtensions writes Extension extensions<V>.
func addExtensions(b *cryptobyte.Builder, exts []Extension) {
	addVector(b, func(b *cryptobyte.Builder) {
		for i := range exts {
			exts[i].marshal(b)
		}
	})
}

// readExtensions reads Extension extensions<V>. A list with two extensions
// of one type is malformed (RFC 9420, Section 13.4).
func readExtensions(d *decoder, out *[]Extension) bool {
	var exts []Extension
	ok := d.vector("extensions", func(d *decoder) bool {
		start := d.offset()
		var e Extension
		if !e.unmarshal(d) {
			return false
		}
		for _, o := range exts {
			if o.Type == e.Type {
				return d.failAt(start, "extension_type", "duplicate extension type %#04x", uint16(e.Type))
			}
		}
		exts = append(exts, e)
		return true
	})
	*out = exts
	return ok
}

// findExtension returns the extension of type t, or nil.
func findExtension(exts []Extension, t ExtensionType) *Extension {
	for i := range exts {
		if exts[i].Type == t {
			return &exts[i]
		}
	}
	return nil
}

// cloneExtensions returns a deep copy of exts.
func cloneExtensions(exts []Extension) []Extension {
	if exts == nil {
		return nil
	}
	out := make([]Extension, len(exts))
	for i, e := range exts {
		out[i] = Extension{Type: e.Type, Data: bytes.Clone(e.Data)}
	}
	return out
}

// RequiredCapabilities is the required_capabilities GroupContext extension
// (RFC 9420, Section 11.1).
type RequiredCapabilities struct {
	ExtensionTypes  []ExtensionType
	ProposalTypes   []ProposalType
	CredentialTypes []CredentialType
}

func (r *RequiredCapabilities) marshal(b *cryptobyte.Builder) {
	addUint16s(b, r.ExtensionTypes)
	addUint16s(b, r.ProposalTypes)
	addUint16s(b, r.CredentialTypes)
}

func (r *RequiredCapabilities) unmarshal(d *decoder) bool {
	return readUint16s(d, "extension_types", &r.ExtensionTypes) &&
		readUint16s(d, "proposal_types", &r.ProposalTypes) &&
		readUint16s(d, "credential_types", &r.CredentialTypes)
}

// ExternalSender is an entry of the external_senders GroupContext extension,
// which is a vector of them: ExternalSender external_senders<V> (RFC 9420,
// Section 12.1.8.1).
type ExternalSender struct {
	SignatureKey []byte
	Credential   Credential
}

func (e *ExternalSender) marshal(b *cryptobyte.Builder) {
	addOpaque(b, e.SignatureKey)
	e.Credential.marshal(b)
}

func (e *ExternalSender) unmarshal(d *decoder) bool {
	return d.opaque("signature_key", &e.SignatureKey) && d.sub("credential", e.Credential.unmarshal)
}

// externalSenders is the body of the external_senders extension.
type externalSenders []ExternalSender

func (es *externalSenders) marshal(b *cryptobyte.Builder) {
	addVector(b, func(b *cryptobyte.Builder) {
		for i := range *es {
			(*es)[i].marshal(b)
		}
	})
}

func (es *externalSenders) unmarshal(d *decoder) bool {
	*es = nil
	return d.vector("external_senders", func(d *decoder) bool {
		var e ExternalSender
		if !e.unmarshal(d) {
			return false
		}
		*es = append(*es, e)
		return true
	})
}

// ExternalSendersExtension returns the external_senders extension listing
// senders (RFC 9420, Section 12.1.8.1).
func ExternalSendersExtension(senders []ExternalSender) Extension {
	es := externalSenders(senders)
	return Extension{Type: ExtensionTypeExternalSenders, Data: encode(&es)}
}

// ParseExternalSenders decodes the body of an external_senders extension
// (RFC 9420, Section 12.1.8.1).
func ParseExternalSenders(data []byte) ([]ExternalSender, error) {
	var es externalSenders
	if err := decodeAll(data, &es, "ExternalSenders"); err != nil {
		return nil, err
	}
	return es, nil
}

// RequiredCapabilitiesExtension returns the required_capabilities extension
// (RFC 9420, Section 11.1).
func RequiredCapabilitiesExtension(r RequiredCapabilities) Extension {
	return Extension{Type: ExtensionTypeRequiredCapabilities, Data: encode(&r)}
}

// parseRequiredCapabilities decodes a required_capabilities body.
func parseRequiredCapabilities(data []byte) (*RequiredCapabilities, error) {
	var r RequiredCapabilities
	if err := decodeAll(data, &r, "RequiredCapabilities"); err != nil {
		return nil, err
	}
	return &r, nil
}

// ExternalPub is the body of the external_pub GroupInfo extension (RFC 9420,
// Section 12.4.3.2).
type ExternalPub struct {
	PublicKey []byte
}

func (e *ExternalPub) marshal(b *cryptobyte.Builder) { addOpaque(b, e.PublicKey) }

func (e *ExternalPub) unmarshal(d *decoder) bool { return d.opaque("external_pub", &e.PublicKey) }

// ExternalPubExtension returns the external_pub extension for key (RFC
// 9420, Section 12.4.3.2).
func ExternalPubExtension(key []byte) Extension {
	return Extension{Type: ExtensionTypeExternalPub, Data: encode(&ExternalPub{PublicKey: key})}
}

// ParseExternalPub decodes the body of an external_pub extension (RFC 9420,
// Section 12.4.3.2): ExternalPub, an HPKEPublicKey with its length prefix.
//
// It also accepts the bare key, exactly suite.HPKEKeySize (32) bytes,
// as ts-mls 1.6.4 writes it (docs/interop.md). The two cannot be confused:
// the RFC form of an X25519 key is 33 bytes, and 32 bytes in the RFC form
// would hold a 31-byte key, which no cipher suite we accept has.
// ExternalPubExtension always writes the RFC form.
func ParseExternalPub(data []byte) ([]byte, error) {
	if len(data) == suite.HPKEKeySize {
		return bytes.Clone(data), nil
	}
	var e ExternalPub
	if err := decodeAll(data, &e, "ExternalPub"); err != nil {
		return nil, err
	}
	return e.PublicKey, nil
}

// validateGroupContextExtensions checks the bodies of the RFC 9420
// extensions we understand in a GroupContext, so that a bad body is rejected
// when the extension enters the group rather than when it is used.
func validateGroupContextExtensions(exts []Extension) error {
	for _, e := range exts {
		switch e.Type {
		case ExtensionTypeRequiredCapabilities:
			if _, err := parseRequiredCapabilities(e.Data); err != nil {
				return err
			}
		case ExtensionTypeExternalSenders:
			if _, err := ParseExternalSenders(e.Data); err != nil {
				return err
			}
		case ExtensionTypeRatchetTree, ExtensionTypeExternalPub:
			return fmt.Errorf("%w: extension %d is not a GroupContext extension", ErrInvalidProposal, e.Type)
		}
	}
	return nil
}
