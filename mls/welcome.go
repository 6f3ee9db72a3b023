package mls

import (
	"golang.org/x/crypto/cryptobyte"
)

// This file holds the Welcome structures and their codecs (RFC 9420,
// Section 12.4.3.1). Creating and processing Welcomes is in welcome_*.go.

// PathSecret carries a path secret to a joiner (RFC 9420, Section
// 12.4.3.1).
type PathSecret struct {
	PathSecret []byte
}

// GroupSecrets is what a Welcome encrypts to each new member (RFC 9420,
// Section 12.4.3.1).
type GroupSecrets struct {
	JoinerSecret []byte
	PathSecret   *PathSecret
	PSKs         []PreSharedKeyID
}

func (g *GroupSecrets) marshal(b *cryptobyte.Builder) {
	addOpaque(b, g.JoinerSecret)
	addOptional(b, g.PathSecret != nil, func(b *cryptobyte.Builder) {
		addOpaque(b, g.PathSecret.PathSecret)
	})
	addPSKIDs(b, g.PSKs)
}

func (g *GroupSecrets) unmarshal(d *decoder) bool {
	*g = GroupSecrets{}
	var present bool
	if !d.opaque("joiner_secret", &g.JoinerSecret) || !d.optional("path_secret", &present) {
		return false
	}
	if present {
		g.PathSecret = new(PathSecret)
		if !d.opaque("path_secret.path_secret", &g.PathSecret.PathSecret) {
			return false
		}
	}
	return readPSKIDs(d, &g.PSKs)
}

// Marshal returns the encoding of the GroupSecrets (RFC 9420, Section
// 12.4.3.1).
func (g *GroupSecrets) Marshal() []byte { return encode(g) }

// ParseGroupSecrets decodes a GroupSecrets (RFC 9420, Section 12.4.3.1).
func ParseGroupSecrets(data []byte) (*GroupSecrets, error) {
	var g GroupSecrets
	if err := decodeAll(data, &g, "GroupSecrets"); err != nil {
		return nil, err
	}
	return &g, nil
}

// EncryptedGroupSecrets is the GroupSecrets of one new member, encrypted to
// the init key of its KeyPackage (RFC 9420, Section 12.4.3.1).
type EncryptedGroupSecrets struct {
	NewMember             []byte // KeyPackageRef
	EncryptedGroupSecrets HPKECiphertext
}

func (e *EncryptedGroupSecrets) marshal(b *cryptobyte.Builder) {
	addOpaque(b, e.NewMember)
	e.EncryptedGroupSecrets.marshal(b)
}

func (e *EncryptedGroupSecrets) unmarshal(d *decoder) bool {
	return d.opaque("new_member", &e.NewMember) && d.sub("encrypted_group_secrets", e.EncryptedGroupSecrets.unmarshal)
}

// Welcome brings new members into a group (RFC 9420, Section 12.4.3.1).
type Welcome struct {
	CipherSuite        CipherSuite
	Secrets            []EncryptedGroupSecrets
	EncryptedGroupInfo []byte
}

func (w *Welcome) marshal(b *cryptobyte.Builder) {
	b.AddUint16(uint16(w.CipherSuite))
	addVector(b, func(b *cryptobyte.Builder) {
		for i := range w.Secrets {
			w.Secrets[i].marshal(b)
		}
	})
	addOpaque(b, w.EncryptedGroupInfo)
}

func (w *Welcome) unmarshal(d *decoder) bool {
	*w = Welcome{}
	return readCipherSuite(d, "cipher_suite", &w.CipherSuite) && d.vector("secrets", func(d *decoder) bool {
		var e EncryptedGroupSecrets
		if !e.unmarshal(d) {
			return false
		}
		w.Secrets = append(w.Secrets, e)
		return true
	}) && d.opaque("encrypted_group_info", &w.EncryptedGroupInfo)
}

// Marshal returns the encoding of the Welcome (RFC 9420, Section
// 12.4.3.1), without an MLSMessage wrapper.
func (w *Welcome) Marshal() []byte { return encode(w) }

// ParseWelcome decodes a Welcome (RFC 9420, Section 12.4.3.1) without an
// MLSMessage wrapper.
func ParseWelcome(data []byte) (*Welcome, error) {
	var w Welcome
	if err := decodeAll(data, &w, "Welcome"); err != nil {
		return nil, err
	}
	return &w, nil
}
