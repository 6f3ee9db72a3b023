package vectors

import (
	"crypto/ed25519"
	"fmt"

	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// treekem: UpdatePath processing and creation (RFC 9420, Sections 7.4 to
// 7.6 and 12.4.2).
func init() {
	register(&kind{name: "treekem", requires: []string{"update_paths"}, run: runTreeKEM})
}

func runTreeKEM(c fields) error {
	var v vectorfmt.TreeKEM
	if err := decode(c, &v); err != nil {
		return err
	}
	tree, err := mls.ParseRatchetTree(v.RatchetTree)
	if err != nil {
		return err
	}
	ctx := &mls.GroupContext{
		Version: mls.ProtocolMLS10, CipherSuite: mls.CipherSuite(v.CipherSuite),
		GroupID: v.GroupID, Epoch: v.Epoch, ConfirmedTranscriptHash: v.ConfirmedTranscriptHash,
	}
	// member returns leaf i's private TreeKEM state over the vector's tree.
	member := map[uint32]func() (*mls.TreeKEMMember, error){}
	sigs := map[uint32]ed25519.PrivateKey{}
	var ck checker
	for _, lp := range v.LeavesPrivate {
		secrets := map[uint32][]byte{}
		for _, ps := range lp.PathSecrets {
			secrets[ps.Node] = ps.PathSecret
		}
		member[lp.Index] = func() (*mls.TreeKEMMember, error) {
			return mls.NewTreeKEMMember(tree, lp.Index, lp.EncryptionPriv, secrets)
		}
		if _, err := member[lp.Index](); err != nil {
			return fmt.Errorf("leaf %d: private state inconsistent with the tree: %w", lp.Index, err)
		}
		if len(lp.SignaturePriv) != ed25519.SeedSize {
			return fmt.Errorf("leaf %d: signature_priv of %d bytes", lp.Index, len(lp.SignaturePriv))
		}
		sigs[lp.Index] = ed25519.NewKeyFromSeed(lp.SignaturePriv)
	}
	for _, u := range v.UpdatePaths {
		up, err := mls.ParseUpdatePath(u.UpdatePath)
		if err != nil {
			return err
		}
		if member[u.Sender] == nil {
			return fmt.Errorf("no private state for sender %d", u.Sender)
		}
		for j, newMember := range member {
			if j == u.Sender {
				continue
			}
			m, _ := newMember()
			what := fmt.Sprintf("sender %d, leaf %d", u.Sender, j)
			ps, cs, err := m.ProcessUpdatePath(u.Sender, up, ctx)
			if ck.fail(what, err) {
				continue
			}
			if int(j) >= len(u.PathSecrets) {
				ck.errorf("%s: no expected path secret", what)
			} else {
				ck.bytes(what+": path secret", ps, u.PathSecrets[j])
			}
			ck.bytes(what+": commit secret", cs, u.CommitSecret)
			ck.bytes(what+": tree hash after", m.Tree().TreeHash(), u.TreeHashAfter)
		}

		sender, _ := member[u.Sender]()
		fresh, cs, err := sender.CreateUpdatePath(sigs[u.Sender], ctx, nil)
		if ck.fail(fmt.Sprintf("sender %d: creating a path", u.Sender), err) {
			continue
		}
		for j, newMember := range member {
			if j == u.Sender {
				continue
			}
			m, _ := newMember()
			what := fmt.Sprintf("sender %d, leaf %d, fresh path", u.Sender, j)
			_, got, err := m.ProcessUpdatePath(u.Sender, fresh, ctx)
			if ck.fail(what, err) {
				continue
			}
			ck.bytes(what+": commit secret", got, cs)
		}
	}
	return ck.err()
}
