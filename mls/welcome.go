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

func (g *GroupSecrets) unmarshal(s *cryptobyte.String) bool {
	*g = GroupSecrets{}
	var present bool
	if !readOpaque(s, &g.JoinerSecret) || !readOptional(s, &present) {
		return false
	}
	if present {
		g.PathSecret = new(PathSecret)
		if !readOpaque(s, &g.PathSecret.PathSecret) {
			return false
		}
	}
	return readPSKIDs(s, &g.PSKs)
}

// Marshal returns the encoding of the GroupSecrets.
func (g *GroupSecrets) Marshal() []byte { return encode(g) }

// ParseGroupSecrets decodes a GroupSecrets.
func ParseGroupSecrets(data []byte) (*GroupSecrets, error) {
	var g GroupSecrets
	if err := decodeAll(data, &g, "GroupSecrets"); err != nil {
		return nil, err
	}
	return &g, nil
}

// EncryptedGroupSecrets is the GroupSecrets of one new member, encrypted to
// the init key of its KeyPackage.
type EncryptedGroupSecrets struct {
	NewMember             []byte // KeyPackageRef
	EncryptedGroupSecrets HPKECiphertext
}

func (e *EncryptedGroupSecrets) marshal(b *cryptobyte.Builder) {
	addOpaque(b, e.NewMember)
	e.EncryptedGroupSecrets.marshal(b)
}

func (e *EncryptedGroupSecrets) unmarshal(s *cryptobyte.String) bool {
	return readOpaque(s, &e.NewMember) && e.EncryptedGroupSecrets.unmarshal(s)
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

func (w *Welcome) unmarshal(s *cryptobyte.String) bool {
	*w = Welcome{}
	return readCipherSuite(s, &w.CipherSuite) && readVector(s, func(s *cryptobyte.String) bool {
		var e EncryptedGroupSecrets
		if !e.unmarshal(s) {
			return false
		}
		w.Secrets = append(w.Secrets, e)
		return true
	}) && readOpaque(s, &w.EncryptedGroupInfo)
}

// Marshal returns the encoding of the Welcome (without an MLSMessage
// wrapper).
func (w *Welcome) Marshal() []byte { return encode(w) }

// ParseWelcome decodes a Welcome (without an MLSMessage wrapper).
func ParseWelcome(data []byte) (*Welcome, error) {
	var w Welcome
	if err := decodeAll(data, &w, "Welcome"); err != nil {
		return nil, err
	}
	return &w, nil
}
