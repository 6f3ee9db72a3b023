package mls

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"slices"
	"time"

	"github.com/torpor-dev/torpor/mls/internal/suite"
	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
)

const (
	labelLeafNodeTBS   = "LeafNodeTBS"
	labelKeyPackageTBS = "KeyPackageTBS"
)

// sign signs l in place with priv, for the group and leaf given (ignored
// for the key_package source; RFC 9420, Section 7.2).
func (l *LeafNode) sign(priv ed25519.PrivateKey, groupID []byte, leaf uint32) error {
	sig, err := suite.SignWithLabel(priv, labelLeafNodeTBS, l.tbs(groupID, leaf))
	if err != nil {
		return err
	}
	l.Signature = sig
	return nil
}

// VerifySignature reports whether the LeafNode's signature is valid for
// its own signature key; groupID and leaf are the context of update and
// commit leaves (RFC 9420, Section 7.2).
func (l *LeafNode) VerifySignature(groupID []byte, leaf uint32) bool {
	return suite.VerifyWithLabel(l.SignatureKey, labelLeafNodeTBS, l.tbs(groupID, leaf), l.Signature)
}

// A LifetimePolicy decides whether LeafNode lifetimes are acceptable (RFC
// 9420, Section 7.3). Lifetimes are checked for KeyPackages this client
// adds or receives in Add proposals, never for leaves already in a tree
// (a joiner would otherwise reject groups whose members' KeyPackages have
// since expired; the working group's vectors are full of such trees).
type LifetimePolicy struct {
	// Time returns the current time; nil means time.Now.
	Time func() time.Time
	// MaxLifetime is the longest not_after - not_before accepted. Zero
	// means no limit: ts-mls, our main peer, issues KeyPackages valid from
	// 0 to 2^63-1 by default.
	MaxLifetime time.Duration
	// Skip disables lifetime checks (for replaying old transcripts).
	Skip bool
}

// check returns ErrLifetime if lt is not acceptable now.
func (p LifetimePolicy) check(lt Lifetime) error {
	if p.Skip {
		return nil
	}
	now := time.Now
	if p.Time != nil {
		now = p.Time
	}
	secs := now().Unix()
	if secs < 0 || uint64(secs) < lt.NotBefore || uint64(secs) > lt.NotAfter {
		return fmt.Errorf("%w: [%d, %d] does not contain %d", ErrLifetime, lt.NotBefore, lt.NotAfter, secs)
	}
	if p.MaxLifetime > 0 && lt.NotAfter-lt.NotBefore > uint64(p.MaxLifetime/time.Second) {
		return fmt.Errorf("%w: longer than %v", ErrLifetime, p.MaxLifetime)
	}
	return nil
}

// leafCheck holds what LeafNode validation (RFC 9420, Section 7.3) needs
// besides the leaf itself.
type leafCheck struct {
	groupID    []byte
	index      tm.LeafIndex
	source     LeafNodeSource // required source; 0 accepts any
	extensions []Extension    // GroupContext extensions
	lifetime   *LifetimePolicy
	// credential validates the credential with the Authentication Service;
	// nil accepts every credential.
	credential func(Credential, []byte) error
	// successor, set when the leaf replaces the member's leaf at index (an
	// Update or an UpdatePath), validates the new credential as a successor
	// of the old one (RFC 9420, Section 5.3.1); nil accepts every successor.
	successor func(old, new Credential) error
}

// validateLeaf checks leaf against tree (RFC 9420, Section 7.3): signature,
// source, capabilities, required capabilities, credential types, lifetime,
// and uniqueness of its keys among the other nodes of tree (the node at
// c.index itself is skipped, being the one replaced).
func (t *RatchetTree) validateLeaf(leaf *LeafNode, c leafCheck) error {
	if c.source != 0 && leaf.Source != c.source {
		return fmt.Errorf("%w: source %d, want %d", ErrInvalidLeafNode, leaf.Source, c.source)
	}
	if !leaf.VerifySignature(c.groupID, uint32(c.index)) {
		return fmt.Errorf("%w on leaf node", ErrInvalidSignature)
	}
	if c.credential != nil {
		if err := c.credential(leaf.Credential, leaf.SignatureKey); err != nil {
			return fmt.Errorf("%w: credential: %w", ErrInvalidLeafNode, err)
		}
	}
	if old := t.Leaf(uint32(c.index)); c.successor != nil && old != nil {
		if err := c.successor(old.Credential, leaf.Credential); err != nil {
			return fmt.Errorf("%w: credential of leaf %d replaced: %w", ErrInvalidLeafNode, c.index, err)
		}
	}
	if err := checkLeafCapabilities(leaf, c.extensions); err != nil {
		return err
	}
	if c.lifetime != nil && leaf.Source == LeafNodeSourceKeyPackage {
		if err := c.lifetime.check(leaf.Lifetime); err != nil {
			return err
		}
	}
	if err := t.checkCredentialTypes(leaf, c.index); err != nil {
		return err
	}
	return t.checkUniqueKeys(leaf, c.index)
}

// checkLeafCapabilities checks that the leaf supports its own credential
// and extensions and the group's required capabilities and extensions.
func checkLeafCapabilities(leaf *LeafNode, groupExts []Extension) error {
	caps := &leaf.Capabilities
	if !slices.Contains(caps.Credentials, leaf.Credential.Type) {
		return fmt.Errorf("%w: credential type %d not in capabilities", ErrInvalidLeafNode, leaf.Credential.Type)
	}
	for _, e := range leaf.Extensions {
		if !isDefaultExtension(e.Type) && !slices.Contains(caps.Extensions, e.Type) {
			return fmt.Errorf("%w: extension %d not in capabilities", ErrInvalidLeafNode, e.Type)
		}
	}
	return checkSupportsGroup(caps, groupExts)
}

// checkSupportsGroup checks that caps cover the group's extensions and its
// required_capabilities (RFC 9420, Sections 11.1 and 13.4).
func checkSupportsGroup(caps *Capabilities, groupExts []Extension) error {
	for _, e := range groupExts {
		if !isDefaultExtension(e.Type) && !slices.Contains(caps.Extensions, e.Type) {
			return fmt.Errorf("%w: group extension %d not supported", ErrInvalidLeafNode, e.Type)
		}
	}
	rcExt := findExtension(groupExts, ExtensionTypeRequiredCapabilities)
	if rcExt == nil {
		return nil
	}
	rc, err := parseRequiredCapabilities(rcExt.Data)
	if err != nil {
		return err
	}
	for _, e := range rc.ExtensionTypes {
		if !isDefaultExtension(e) && !slices.Contains(caps.Extensions, e) {
			return fmt.Errorf("%w: required extension %d not supported", ErrInvalidLeafNode, e)
		}
	}
	for _, p := range rc.ProposalTypes {
		if !isDefaultProposal(p) && !slices.Contains(caps.Proposals, p) {
			return fmt.Errorf("%w: required proposal %d not supported", ErrInvalidLeafNode, p)
		}
	}
	for _, ct := range rc.CredentialTypes {
		if !slices.Contains(caps.Credentials, ct) {
			return fmt.Errorf("%w: required credential %d not supported", ErrInvalidLeafNode, ct)
		}
	}
	return nil
}

// checkCredentialTypes checks that every other member supports leaf's
// credential type and that leaf supports every other member's (RFC 9420,
// Section 7.3).
func (t *RatchetTree) checkCredentialTypes(leaf *LeafNode, self tm.LeafIndex) error {
	for _, l := range t.members() {
		if l == self {
			continue
		}
		o := t.leaf(l)
		if !slices.Contains(o.Capabilities.Credentials, leaf.Credential.Type) {
			return fmt.Errorf("%w: member %d does not support credential type %d", ErrInvalidLeafNode, l, leaf.Credential.Type)
		}
		if !slices.Contains(leaf.Capabilities.Credentials, o.Credential.Type) {
			return fmt.Errorf("%w: credential type %d of member %d not supported", ErrInvalidLeafNode, o.Credential.Type, l)
		}
	}
	return nil
}

// checkUniqueKeys checks that leaf's signature key is not another member's
// and its encryption key is in no other node (RFC 9420, Section 7.3).
func (t *RatchetTree) checkUniqueKeys(leaf *LeafNode, self tm.LeafIndex) error {
	for x, n := range t.nodes {
		if tm.NodeIndex(x) == self.Node() || n.Blank() {
			continue
		}
		if bytes.Equal(n.encryptionKey(), leaf.EncryptionKey) {
			return fmt.Errorf("%w: encryption key already in node %d", ErrInvalidLeafNode, x)
		}
		if n.Leaf != nil && bytes.Equal(n.Leaf.SignatureKey, leaf.SignatureKey) {
			return fmt.Errorf("%w: signature key already used by leaf %d", ErrInvalidLeafNode, x/2)
		}
	}
	return nil
}
