package mls

import (
	"bytes"
	"fmt"

	"github.com/torpor-dev/torpor/mls/internal/suite"
	tm "github.com/torpor-dev/torpor/mls/internal/treemath"
)

// nodeKeyPair derives the HPKE key pair of a node from its path secret:
// node_secret = DeriveSecret(path_secret, "node"), node_priv, node_pub =
// KEM.DeriveKeyPair(node_secret) (RFC 9420, Section 7.4).
func nodeKeyPair(pathSecret []byte) (priv, pub []byte, err error) {
	return suite.DeriveKeyPair(suite.DeriveSecret(pathSecret, "node"))
}

// nextPathSecret returns path_secret[n+1] = DeriveSecret(path_secret[n],
// "path") (RFC 9420, Section 7.4).
func nextPathSecret(pathSecret []byte) []byte {
	return suite.DeriveSecret(pathSecret, "path")
}

// joinPathKeys derives the private keys a new member gets from the
// path_secret of its Welcome (RFC 9420, Section 12.4.3.1): the path secret
// belongs to the lowest common ancestor of our leaf and the committer's
// (signer's) leaf, and each later node of the committer's filtered direct
// path takes the next path secret. Every derived public key must equal the
// one in the tree; otherwise the Welcome is invalid.
func joinPathKeys(t *RatchetTree, me, signer tm.LeafIndex, pathSecret []byte) (map[tm.NodeIndex][]byte, error) {
	if me == signer {
		return nil, fmt.Errorf("%w: the committer cannot welcome itself", ErrInvalidWelcome)
	}
	ancestor := tm.CommonAncestor(me.Node(), signer.Node())
	path, _ := t.filteredDirectPath(signer)
	start := -1
	for i, x := range path {
		if x == ancestor {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("%w: path_secret for node %d, not on the committer's filtered direct path", ErrInvalidWelcome, ancestor)
	}
	keys := map[tm.NodeIndex][]byte{}
	secret := pathSecret
	for i, x := range path[start:] {
		if i > 0 {
			secret = nextPathSecret(secret)
		}
		priv, pub, err := nodeKeyPair(secret)
		if err != nil {
			return nil, err
		}
		if p := t.parent(x); p == nil || !bytes.Equal(p.EncryptionKey, pub) {
			return nil, fmt.Errorf("%w: path secret does not match the public key of node %d", ErrInvalidWelcome, x)
		}
		keys[x] = priv
	}
	return keys, nil
}
