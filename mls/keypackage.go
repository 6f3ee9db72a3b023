package mls

import (
	"golang.org/x/crypto/cryptobyte"
)

// A KeyPackage advertises a client that can be added to groups (RFC 9420,
// Section 10).
type KeyPackage struct {
	Version     ProtocolVersion
	CipherSuite CipherSuite
	InitKey     []byte
	LeafNode    LeafNode
	Extensions  []Extension
	Signature   []byte
}

func (k *KeyPackage) marshalTBS(b *cryptobyte.Builder) {
	b.AddUint16(uint16(k.Version))
	b.AddUint16(uint16(k.CipherSuite))
	addOpaque(b, k.InitKey)
	k.LeafNode.marshal(b)
	addExtensions(b, k.Extensions)
}

func (k *KeyPackage) marshal(b *cryptobyte.Builder) {
	k.marshalTBS(b)
	addOpaque(b, k.Signature)
}

func (k *KeyPackage) unmarshal(d *decoder) bool {
	*k = KeyPackage{}
	return readVersion(d, "version", &k.Version) && readCipherSuite(d, "cipher_suite", &k.CipherSuite) &&
		d.opaque("init_key", &k.InitKey) && d.sub("leaf_node", k.LeafNode.unmarshal) &&
		readExtensions(d, &k.Extensions) && d.opaque("signature", &k.Signature)
}

// tbs returns the KeyPackageTBS encoding.
func (k *KeyPackage) tbs() []byte {
	var b cryptobyte.Builder
	k.marshalTBS(&b)
	return b.BytesOrPanic()
}

// Marshal returns the encoding of the KeyPackage (RFC 9420, Section 10),
// without an MLSMessage wrapper.
func (k *KeyPackage) Marshal() []byte { return encode(k) }

// ParseKeyPackage decodes a KeyPackage (without an MLSMessage wrapper). It
// checks the syntax only; KeyPackage.Verify makes the checks of RFC 9420,
// Section 10.1.
func ParseKeyPackage(data []byte) (*KeyPackage, error) {
	var k KeyPackage
	if err := decodeAll(data, &k, "KeyPackage"); err != nil {
		return nil, err
	}
	return &k, nil
}
