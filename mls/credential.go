package mls

import (
	"bytes"

	"golang.org/x/crypto/cryptobyte"
)

// A Credential binds an identity to a signature key (RFC 9420, Section 5.3).
//
// Basic credentials carry Identity; X.509 credentials carry Certificates
// (DER, end-entity first). A credential of any other type keeps its body in
// Data, encoded as opaque<V>.
type Credential struct {
	Type         CredentialType
	Identity     []byte   // CredentialTypeBasic
	Certificates [][]byte // CredentialTypeX509
	Data         []byte   // any other type
}

// NewBasicCredential returns a basic credential for identity (RFC 9420,
// Section 5.3).
func NewBasicCredential(identity []byte) Credential {
	return Credential{Type: CredentialTypeBasic, Identity: bytes.Clone(identity)}
}

func (c *Credential) marshal(b *cryptobyte.Builder) {
	b.AddUint16(uint16(c.Type))
	switch c.Type {
	case CredentialTypeBasic:
		addOpaque(b, c.Identity)
	case CredentialTypeX509:
		addVector(b, func(b *cryptobyte.Builder) {
			for _, cert := range c.Certificates {
				addOpaque(b, cert)
			}
		})
	default:
		addOpaque(b, c.Data)
	}
}

func (c *Credential) unmarshal(d *decoder) bool {
	*c = Credential{}
	if !d.u16("credential_type", (*uint16)(&c.Type)) {
		return false
	}
	switch c.Type {
	case CredentialTypeBasic:
		return d.opaque("identity", &c.Identity)
	case CredentialTypeX509:
		return d.vector("certificates", func(d *decoder) bool {
			var cert []byte
			if !d.opaque("cert_data", &cert) {
				return false
			}
			c.Certificates = append(c.Certificates, cert)
			return true
		})
	default:
		// Not an RFC 9420 field: the body of an unknown credential type,
		// which we carry as opaque<V> (see codec.go).
		return d.opaque("data", &c.Data)
	}
}

// Equal reports whether c and o encode identically. It is this package's
// helper, not an RFC 9420 operation.
func (c *Credential) Equal(o *Credential) bool {
	return bytes.Equal(encode(c), encode(o))
}
