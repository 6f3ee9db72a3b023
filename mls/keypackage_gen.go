package mls

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/torpor-dev/torpor/mls/internal/suite"
)

// KeyPackagePrivate holds the private keys of a KeyPackage (RFC 9420,
// Section 10): the init key (for the Welcome), the leaf's encryption key
// and the signature key.
type KeyPackagePrivate struct {
	InitPriv       []byte
	EncryptionPriv []byte
	SignaturePriv  ed25519.PrivateKey
}

// greaseValues are the GREASE code points of RFC 9420, Section 13.5.
var greaseValues = [...]uint16{
	0x0A0A, 0x1A1A, 0x2A2A, 0x3A3A, 0x4A4A, 0x5A5A, 0x6A6A, 0x7A7A,
	0x8A8A, 0x9A9A, 0xAAAA, 0xBABA, 0xCACA, 0xDADA, 0xEAEA,
}

// grease returns one GREASE value chosen by rand.
func grease(rand io.Reader) (uint16, error) {
	var b [1]byte
	if _, err := io.ReadFull(rand, b[:]); err != nil {
		return 0, err
	}
	return greaseValues[int(b[0])%len(greaseValues)], nil
}

// defaultCapabilities returns what this package supports, plus one GREASE
// value in each list where RFC 9420, Section 13.5 recommends it.
func defaultCapabilities(cred CredentialType, rand io.Reader) (Capabilities, error) {
	caps := Capabilities{
		Versions:     []ProtocolVersion{ProtocolMLS10},
		CipherSuites: []CipherSuite{CipherSuiteX25519AES128SHA256Ed25519},
		Credentials:  []CredentialType{CredentialTypeBasic},
	}
	if !slices.Contains(caps.Credentials, cred) {
		caps.Credentials = append(caps.Credentials, cred)
	}
	var gv [4]uint16
	for i := range gv {
		v, err := grease(rand)
		if err != nil {
			return Capabilities{}, err
		}
		gv[i] = v
	}
	caps.CipherSuites = append(caps.CipherSuites, CipherSuite(gv[0]))
	caps.Extensions = append(caps.Extensions, ExtensionType(gv[1]))
	caps.Proposals = append(caps.Proposals, ProposalType(gv[2]))
	caps.Credentials = append(caps.Credentials, CredentialType(gv[3]))
	return caps, nil
}

// DefaultKeyPackageLifetime is how long the KeyPackages we generate stay
// valid from now when Config.KeyPackageLifetime is zero (RFC 9420, Section
// 7.2 leaves it to the application). With KeyPackageClockSkew before now,
// the whole lifetime is 27 days and an hour: within the 28 days we allow
// for peers that cap lifetimes at a month (ts-mls declares 2,628,000 s,
// 30.4 days; docs/interop.md), leaving slack for their clocks.
const DefaultKeyPackageLifetime = 27 * 24 * time.Hour

// KeyPackageClockSkew is how long before now the lifetime of a KeyPackage
// we generate starts, for peers whose clocks lag.
const KeyPackageClockSkew = time.Hour

// NewKeyPackage generates a KeyPackage for cred, signed with sigPriv (RFC
// 9420, Section 10), with fresh init and encryption keys, the capabilities
// of this package (with GREASE values) and a lifetime from
// KeyPackageClockSkew (an hour) ago to cfg.KeyPackageLifetime
// (DefaultKeyPackageLifetime, 27 days, by default) from now.
func NewKeyPackage(cfg *Config, cred Credential, sigPriv ed25519.PrivateKey) (*KeyPackage, *KeyPackagePrivate, error) {
	if len(sigPriv) != ed25519.PrivateKeySize {
		return nil, nil, suite.ErrBadSignatureKey
	}
	rand := cfg.rand()
	initPriv, initPub, err := suite.GenerateKeyPair(rand)
	if err != nil {
		return nil, nil, err
	}
	leaf, encPriv, err := newLeafNode(cfg, cred, sigPriv)
	if err != nil {
		return nil, nil, err
	}
	kp := &KeyPackage{
		Version:     ProtocolMLS10,
		CipherSuite: CipherSuiteX25519AES128SHA256Ed25519,
		InitKey:     initPub,
		LeafNode:    *leaf,
	}
	if kp.Signature, err = suite.SignWithLabel(sigPriv, labelKeyPackageTBS, kp.tbs()); err != nil {
		return nil, nil, err
	}
	return kp, &KeyPackagePrivate{InitPriv: initPriv, EncryptionPriv: encPriv, SignaturePriv: sigPriv}, nil
}

// newLeafNode returns a signed key_package-source LeafNode for cred with a
// fresh encryption key.
func newLeafNode(cfg *Config, cred Credential, sigPriv ed25519.PrivateKey) (*LeafNode, []byte, error) {
	rand := cfg.rand()
	encPriv, encPub, err := suite.GenerateKeyPair(rand)
	if err != nil {
		return nil, nil, err
	}
	caps, err := defaultCapabilities(cred.Type, rand)
	if err != nil {
		return nil, nil, err
	}
	life := DefaultKeyPackageLifetime
	if cfg != nil && cfg.KeyPackageLifetime > 0 {
		life = cfg.KeyPackageLifetime
	}
	now := cfg.now()
	leaf := &LeafNode{
		EncryptionKey: encPub,
		SignatureKey:  suite.SignaturePublicKey(sigPriv),
		Credential:    cred,
		Capabilities:  caps,
		Source:        LeafNodeSourceKeyPackage,
		Lifetime: Lifetime{
			NotBefore: uint64(max(now.Add(-KeyPackageClockSkew).Unix(), 0)),
			NotAfter:  uint64(max(now.Add(life).Unix(), 0)),
		},
	}
	if err := leaf.sign(sigPriv, nil, 0); err != nil {
		return nil, nil, err
	}
	return leaf, encPriv, nil
}

// Verify checks a KeyPackage by itself (RFC 9420, Section 10.1): version
// mls10, cipher suite 0x0001, a valid init key different from the leaf's
// encryption key, a leaf with source key_package, a valid leaf signature,
// capabilities that list its credential and extensions, a lifetime the
// policy of cfg accepts, and the KeyPackage signature. It returns errors
// wrapping ErrUnsupportedCipherSuite, ErrInvalidKeyPackage,
// ErrInvalidLeafNode, ErrInvalidSignature or ErrLifetime.
func (k *KeyPackage) Verify(cfg *Config) error {
	if k.Version != ProtocolMLS10 {
		return fmt.Errorf("%w: version %d", ErrInvalidKeyPackage, k.Version)
	}
	if k.CipherSuite != CipherSuiteX25519AES128SHA256Ed25519 {
		return fmt.Errorf("%w: %d", ErrUnsupportedCipherSuite, k.CipherSuite)
	}
	if !suite.ValidPublicKey(k.InitKey) || !suite.ValidPublicKey(k.LeafNode.EncryptionKey) {
		return fmt.Errorf("%w: malformed HPKE public key", ErrInvalidKeyPackage)
	}
	if bytes.Equal(k.InitKey, k.LeafNode.EncryptionKey) {
		return fmt.Errorf("%w: init key equals the encryption key", ErrInvalidKeyPackage)
	}
	lone := &RatchetTree{nodes: []Node{{}}}
	err := lone.validateLeaf(&k.LeafNode, leafCheck{
		source: LeafNodeSourceKeyPackage, lifetime: cfg.lifetime(), credential: cfg.credential(),
	})
	if err != nil {
		return err
	}
	if !suite.VerifyWithLabel(k.LeafNode.SignatureKey, labelKeyPackageTBS, k.tbs(), k.Signature) {
		return fmt.Errorf("%w on key package", ErrInvalidSignature)
	}
	return nil
}
