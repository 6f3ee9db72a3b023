package vectors

import (
	"fmt"

	"github.com/torpor-dev/torpor/mls/internal/secrettree"
	"github.com/torpor-dev/torpor/mls/internal/treemath"
	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// secret-tree: the secret tree, both hash ratchets of every leaf and the
// sender-data key and nonce (RFC 9420 Sections 9 and 6.3.2).
func init() {
	register(&kind{name: "secret-tree", requires: []string{"leaves", "sender_data"}, run: decoded(runSecretTree)})
}

func runSecretTree(v *vectorfmt.SecretTree) error {
	var ck checker
	sd := v.SenderData
	key, nonce := secrettree.SenderDataKeyNonce(sd.SenderDataSecret, sd.Ciphertext)
	ck.bytes("sender_data key", key, sd.Key)
	ck.bytes("sender_data nonce", nonce, sd.Nonce)

	// A receiver that consumes the listed generations in order: this also
	// exercises skipping generations within the window.
	tree, err := secrettree.New(v.EncryptionSecret, uint32(len(v.Leaves)))
	if err != nil {
		return err
	}
	for i, gens := range v.Leaves {
		leaf := treemath.LeafIndex(i)
		for _, g := range gens {
			at := fmt.Sprintf("leaf %d generation %d", i, g.Generation)
			for _, r := range []struct {
				ct         secrettree.ContentType
				name       string
				key, nonce []byte
			}{
				{secrettree.Handshake, "handshake", g.HandshakeKey, g.HandshakeNonce},
				{secrettree.Application, "application", g.ApplicationKey, g.ApplicationNonce},
			} {
				kn, err := tree.Key(leaf, r.ct, g.Generation)
				if ck.fail(at+" "+r.name, err) {
					continue
				}
				ck.bytes(at+" "+r.name+"_key", kn.Key, r.key)
				ck.bytes(at+" "+r.name+"_nonce", kn.Nonce, r.nonce)
				ck.fail(at+" consume "+r.name, tree.Consume(leaf, r.ct, g.Generation))
			}
		}
	}
	return ck.err()
}
