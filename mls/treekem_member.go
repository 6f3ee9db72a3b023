package mls

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"io"
	"maps"

	"github.com/torpor-dev/torpor/mls/internal/suite"
	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
)

// A TreeKEMMember is one member's TreeKEM view of a group without the rest
// of the group state: the public ratchet tree, its leaf and the private keys
// it holds. Groups use the same code internally; the type is exported for
// harnesses that exercise TreeKEM alone, such as the working group's
// treekem vectors (RFC 9420, Sections 7.4 to 7.6).
type TreeKEMMember struct {
	tree *RatchetTree
	self tm.LeafIndex
	keys map[tm.NodeIndex][]byte
}

// NewTreeKEMMember returns the TreeKEM view (RFC 9420, Sections 7.4 to 7.6)
// of the member at leaf of a copy of tree, holding
// encryptionPriv for its leaf and the private keys derived from
// pathSecrets (path secrets by node index). Every key must match the public
// key in its node, which must not be blank.
func NewTreeKEMMember(tree *RatchetTree, leaf uint32, encryptionPriv []byte, pathSecrets map[uint32][]byte) (*TreeKEMMember, error) {
	m := &TreeKEMMember{tree: tree.clone(), self: tm.LeafIndex(leaf), keys: map[tm.NodeIndex][]byte{}}
	ln := m.tree.Leaf(leaf)
	if ln == nil {
		return nil, fmt.Errorf("%w: leaf %d is blank", ErrInvalidTree, leaf)
	}
	pub, err := suite.PublicKey(encryptionPriv)
	if err != nil || !bytes.Equal(pub, ln.EncryptionKey) {
		return nil, fmt.Errorf("%w: private key does not match leaf %d", ErrInvalidTree, leaf)
	}
	m.keys[m.self.Node()] = bytes.Clone(encryptionPriv)
	for x, secret := range pathSecrets {
		priv, pub, err := nodeKeyPair(secret)
		if err != nil {
			return nil, err
		}
		n := m.tree.Node(x)
		if n.Parent == nil || !bytes.Equal(n.Parent.EncryptionKey, pub) || !tm.IsAncestor(tm.NodeIndex(x), m.self.Node()) {
			return nil, fmt.Errorf("%w: path secret does not match node %d", ErrInvalidTree, x)
		}
		m.keys[tm.NodeIndex(x)] = priv
	}
	return m, nil
}

// Tree returns a copy of the member's ratchet tree (RFC 9420, Section 7).
func (m *TreeKEMMember) Tree() *RatchetTree { return m.tree.clone() }

// ProcessUpdatePath validates and merges an UpdatePath from sender and
// decrypts it (RFC 9420, Sections 7.5, 7.6 and 12.4.2). ctx is the
// provisional GroupContext; its TreeHash is replaced by the hash of the
// merged tree. It returns the path secret the member decrypted and the
// commit_secret.
func (m *TreeKEMMember) ProcessUpdatePath(sender uint32, up *UpdatePath, ctx *GroupContext) (pathSecret, commitSecret []byte, err error) {
	s := tm.LeafIndex(sender)
	if s == m.self || m.tree.Leaf(sender) == nil {
		return nil, nil, fmt.Errorf("%w: sender %d", ErrInvalidUpdatePath, sender)
	}
	if err := m.tree.checkUpdatePath(s, up, leafCheck{groupID: ctx.GroupID, extensions: ctx.Extensions}); err != nil {
		return nil, nil, err
	}
	if err := m.tree.mergePath(s, up); err != nil {
		return nil, nil, err
	}
	c := ctx.clone()
	c.TreeHash = m.tree.TreeHash()
	keys, pathSecret, commitSecret, err := m.tree.decryptPath(s, m.self, up, m.keys, nil, c.Marshal())
	if err != nil {
		return nil, nil, err
	}
	m.tree.pruneKeys(m.self, m.keys)
	maps.Copy(m.keys, keys)
	return pathSecret, commitSecret, nil
}

// CreateUpdatePath creates an UpdatePath from the member's leaf, signed
// with sigPriv, and applies it to the member's tree (RFC 9420, Sections 7.4
// to 7.6). ctx is the provisional GroupContext; its TreeHash is replaced by
// the hash of the updated tree. It returns the path and the commit_secret.
func (m *TreeKEMMember) CreateUpdatePath(sigPriv ed25519.PrivateKey, ctx *GroupContext, rand io.Reader) (*UpdatePath, []byte, error) {
	pu, err := m.tree.createPath(m.self, m.tree.leaf(m.self), sigPriv, ctx.GroupID, randOrDefault(rand))
	if err != nil {
		return nil, nil, err
	}
	c := ctx.clone()
	c.TreeHash = m.tree.TreeHash()
	up, err := pu.encrypt(m.tree, c.Marshal(), nil)
	if err != nil {
		return nil, nil, err
	}
	m.tree.pruneKeys(m.self, m.keys)
	maps.Copy(m.keys, pu.keys)
	return up, pu.commitSecret, nil
}

func randOrDefault(r io.Reader) io.Reader {
	return (&Config{Rand: r}).rand()
}
