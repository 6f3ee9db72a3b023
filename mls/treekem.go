package mls

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"io"
	"slices"

	"github.com/torpor-dev/torpor/mls/internal/suite"
	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
)

// TreeKEM: creating and processing UpdatePaths (RFC 9420, Sections 7.4 to
// 7.6, 12.4.1 and 12.4.2).

const labelUpdatePathNode = "UpdatePathNode"

// pathUpdate is an UpdatePath being created: the tree has been updated
// (direct path blanked, new keys and parent hashes set, new leaf signed);
// what is left is encrypting the path secrets, which needs the provisional
// GroupContext and therefore the new tree hash.
type pathUpdate struct {
	leaf    *LeafNode
	path    []tm.NodeIndex // filtered direct path
	copath  []tm.NodeIndex // its copath children
	secrets [][]byte       // path_secret[i] for path[i]
	// keys are the new private keys: the leaf's and the path's.
	keys         map[tm.NodeIndex][]byte
	commitSecret []byte
}

// createPath updates the direct path of leaf self for a new UpdatePath
// (RFC 9420, Sections 7.4 and 7.5). leaf is the committer's new LeafNode
// without key, source and signature (a copy of the current one, or one the
// caller changed); it is completed and signed with sigPriv for groupID.
func (t *RatchetTree) createPath(self tm.LeafIndex, leaf *LeafNode, sigPriv ed25519.PrivateKey, groupID []byte, rand io.Reader) (*pathUpdate, error) {
	leafPriv, leafPub, err := suite.GenerateKeyPair(rand)
	if err != nil {
		return nil, err
	}
	secret := make([]byte, suite.HashSize)
	if _, err := io.ReadFull(rand, secret); err != nil {
		return nil, err
	}
	t.blankPath(self)
	pu := &pathUpdate{keys: map[tm.NodeIndex][]byte{self.Node(): leafPriv}}
	pu.path, pu.copath = t.filteredDirectPath(self)
	for i, x := range pu.path {
		if i > 0 {
			secret = nextPathSecret(secret)
		}
		priv, pub, err := nodeKeyPair(secret)
		if err != nil {
			return nil, err
		}
		t.setNode(x, Node{Parent: &ParentNode{EncryptionKey: pub}})
		pu.secrets = append(pu.secrets, secret)
		pu.keys[x] = priv
	}
	pu.commitSecret = nextPathSecret(secret)

	pu.leaf = leaf.clone()
	pu.leaf.EncryptionKey = leafPub
	pu.leaf.Source = LeafNodeSourceCommit
	pu.leaf.Lifetime = Lifetime{}
	pu.leaf.ParentHash = t.setParentHashes(self)
	if err := pu.leaf.sign(sigPriv, groupID, uint32(self)); err != nil {
		return nil, err
	}
	t.setNode(self.Node(), Node{Leaf: pu.leaf})
	return pu, nil
}

// encrypt encrypts each path secret to the resolution of its copath child,
// leaving out the leaves in newMembers (added by this Commit), with the
// encoded provisional GroupContext ctx as context (RFC 9420, Section 7.6).
func (pu *pathUpdate) encrypt(t *RatchetTree, ctx []byte, newMembers []tm.LeafIndex) (*UpdatePath, error) {
	up := &UpdatePath{LeafNode: *pu.leaf}
	for i, x := range pu.path {
		node := UpdatePathNode{EncryptionKey: t.parent(x).EncryptionKey}
		for _, r := range t.appendResolution(nil, pu.copath[i], newMembers) {
			kemOut, ct, err := suite.EncryptWithLabel(t.nodes[r].encryptionKey(), labelUpdatePathNode, ctx, pu.secrets[i])
			if err != nil {
				return nil, err
			}
			node.EncryptedPathSecret = append(node.EncryptedPathSecret, HPKECiphertext{KEMOutput: kemOut, Ciphertext: ct})
		}
		up.Nodes = append(up.Nodes, node)
	}
	return up, nil
}

// pathSecretFor returns the path secret of the lowest node of the update's
// path that is an ancestor of leaf l, for a new member's GroupSecrets (RFC
// 9420, Section 12.4.1), or nil if there is none.
func (pu *pathUpdate) pathSecretFor(l tm.LeafIndex) []byte {
	for i, x := range pu.path {
		if tm.IsAncestor(x, l.Node()) {
			return pu.secrets[i]
		}
	}
	return nil
}

// checkUpdatePath validates an UpdatePath from sender against the tree
// after the Commit's proposals were applied, before it is merged (RFC 9420,
// Section 12.4.2): the leaf node, its fresh encryption key, the number of
// nodes, and that none of its public keys is already in the tree.
func (t *RatchetTree) checkUpdatePath(sender tm.LeafIndex, up *UpdatePath, c leafCheck) error {
	c.index, c.source = sender, LeafNodeSourceCommit
	if old := t.leaf(sender); old != nil && bytes.Equal(old.EncryptionKey, up.LeafNode.EncryptionKey) {
		return fmt.Errorf("%w: leaf encryption key not changed", ErrInvalidUpdatePath)
	}
	if err := t.validateLeaf(&up.LeafNode, c); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidUpdatePath, err)
	}
	path, _ := t.filteredDirectPath(sender)
	if len(up.Nodes) != len(path) {
		return fmt.Errorf("%w: %d nodes for a filtered direct path of %d", ErrInvalidUpdatePath, len(up.Nodes), len(path))
	}
	seen := map[string]bool{string(up.LeafNode.EncryptionKey): true}
	for i, n := range up.Nodes {
		if !suite.ValidPublicKey(n.EncryptionKey) || seen[string(n.EncryptionKey)] {
			return fmt.Errorf("%w: node %d key invalid or repeated", ErrInvalidUpdatePath, path[i])
		}
		seen[string(n.EncryptionKey)] = true
	}
	for x, n := range t.nodes {
		if tm.NodeIndex(x) != sender.Node() && !n.Blank() && seen[string(n.encryptionKey())] {
			return fmt.Errorf("%w: key already in node %d", ErrInvalidUpdatePath, x)
		}
	}
	return nil
}

// mergePath merges a checked UpdatePath from sender into the tree (RFC
// 9420, Section 7.5) and verifies the leaf's parent hash.
func (t *RatchetTree) mergePath(sender tm.LeafIndex, up *UpdatePath) error {
	t.blankPath(sender)
	path, _ := t.filteredDirectPath(sender)
	for i, x := range path {
		t.setNode(x, Node{Parent: &ParentNode{EncryptionKey: bytes.Clone(up.Nodes[i].EncryptionKey)}})
	}
	ph := t.setParentHashes(sender)
	if !bytes.Equal(ph, up.LeafNode.ParentHash) {
		return fmt.Errorf("%w: leaf parent hash does not match the path", ErrInvalidUpdatePath)
	}
	t.setNode(sender.Node(), Node{Leaf: up.LeafNode.clone()})
	return nil
}

// decryptPath decrypts the path secret meant for leaf self from a merged
// UpdatePath of sender, using the private keys in keys and the encoded
// provisional GroupContext ctx (RFC 9420, Section 7.5). It checks every
// derived public key against the tree and returns the new private keys of
// the path nodes above self, the path secret it decrypted, and the
// commit_secret.
func (t *RatchetTree) decryptPath(sender, self tm.LeafIndex, up *UpdatePath, keys map[tm.NodeIndex][]byte, newMembers []tm.LeafIndex, ctx []byte) (newKeys map[tm.NodeIndex][]byte, pathSecret, commitSecret []byte, err error) {
	path, copath := t.filteredDirectPath(sender)
	start := slices.IndexFunc(copath, func(c tm.NodeIndex) bool { return tm.IsAncestor(c, self.Node()) })
	if start < 0 {
		return nil, nil, nil, fmt.Errorf("%w: no path node covers leaf %d", ErrInvalidUpdatePath, self)
	}
	res := t.appendResolution(nil, copath[start], newMembers)
	cts := up.Nodes[start].EncryptedPathSecret
	if len(cts) != len(res) {
		return nil, nil, nil, fmt.Errorf("%w: %d ciphertexts for a resolution of %d", ErrInvalidUpdatePath, len(cts), len(res))
	}
	ri := slices.IndexFunc(res, func(r tm.NodeIndex) bool { return keys[r] != nil })
	if ri < 0 {
		return nil, nil, nil, fmt.Errorf("%w: no private key for the resolution of node %d", ErrInvalidUpdatePath, copath[start])
	}
	secret, err := suite.DecryptWithLabel(keys[res[ri]], labelUpdatePathNode, ctx, cts[ri].KEMOutput, cts[ri].Ciphertext)
	if err != nil {
		return nil, nil, nil, ErrDecryption
	}
	pathSecret = secret
	newKeys = map[tm.NodeIndex][]byte{}
	for i := start; i < len(path); i++ {
		if i > start {
			secret = nextPathSecret(secret)
		}
		priv, pub, err := nodeKeyPair(secret)
		if err != nil {
			return nil, nil, nil, err
		}
		if !bytes.Equal(pub, t.parent(path[i]).EncryptionKey) {
			return nil, nil, nil, fmt.Errorf("%w: path secret does not match the key of node %d", ErrInvalidUpdatePath, path[i])
		}
		newKeys[path[i]] = priv
	}
	return newKeys, pathSecret, nextPathSecret(secret), nil
}

// pruneKeys drops private keys of nodes that are now blank or that this
// leaf no longer covers.
func (t *RatchetTree) pruneKeys(self tm.LeafIndex, keys map[tm.NodeIndex][]byte) {
	for x := range keys {
		if uint32(x) >= uint32(len(t.nodes)) || t.nodes[x].Blank() || !tm.IsAncestor(x, self.Node()) {
			delete(keys, x)
		}
	}
}
