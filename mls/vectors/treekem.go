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
	register(&kind{name: "treekem", requires: []string{"update_paths"}, run: decoded(runTreeKEM)})
}

func runTreeKEM(v *vectorfmt.TreeKEM) error {
	tree, err := mls.ParseRatchetTree(v.RatchetTree)
	if err != nil {
		return err
	}
	x := &treeKEMRun{
		ctx: &mls.GroupContext{
			Version: mls.ProtocolMLS10, CipherSuite: mls.CipherSuite(v.CipherSuite),
			GroupID: v.GroupID, Epoch: v.Epoch, ConfirmedTranscriptHash: v.ConfirmedTranscriptHash,
		},
		member: map[uint32]func() (*mls.TreeKEMMember, error){},
		sigs:   map[uint32]ed25519.PrivateKey{},
	}
	for _, lp := range v.LeavesPrivate {
		if err := x.addLeaf(tree, lp); err != nil {
			return err
		}
	}
	for _, u := range v.UpdatePaths {
		up, err := mls.ParseUpdatePath(u.UpdatePath)
		if err != nil {
			return err
		}
		if x.member[u.Sender] == nil {
			return fmt.Errorf("no private state for sender %d", u.Sender)
		}
		x.processVectorPath(u, up)
		x.createFreshPath(u.Sender)
	}
	return x.ck.err()
}

// treeKEMRun is one treekem case being checked.
type treeKEMRun struct {
	ctx *mls.GroupContext
	// member returns leaf i's private TreeKEM state over the vector's
	// tree, fresh at each call.
	member map[uint32]func() (*mls.TreeKEMMember, error)
	sigs   map[uint32]ed25519.PrivateKey
	ck     checker
}

// addLeaf records the private state of a leaf and checks it fits the tree.
func (x *treeKEMRun) addLeaf(tree *mls.RatchetTree, lp vectorfmt.TreeKEMLeaf) error {
	secrets := map[uint32][]byte{}
	for _, ps := range lp.PathSecrets {
		secrets[ps.Node] = ps.PathSecret
	}
	x.member[lp.Index] = func() (*mls.TreeKEMMember, error) {
		return mls.NewTreeKEMMember(tree, lp.Index, lp.EncryptionPriv, secrets)
	}
	if _, err := x.member[lp.Index](); err != nil {
		return fmt.Errorf("leaf %d: private state inconsistent with the tree: %w", lp.Index, err)
	}
	if len(lp.SignaturePriv) != ed25519.SeedSize {
		return fmt.Errorf("leaf %d: signature_priv of %d bytes", lp.Index, len(lp.SignaturePriv))
	}
	x.sigs[lp.Index] = ed25519.NewKeyFromSeed(lp.SignaturePriv)
	return nil
}

// processVectorPath has every other leaf process the vector's UpdatePath
// and checks its path secret, the commit secret and the tree hash after.
func (x *treeKEMRun) processVectorPath(u vectorfmt.TreeKEMUpdatePath, up *mls.UpdatePath) {
	for j, newMember := range x.member {
		if j == u.Sender {
			continue
		}
		m, _ := newMember()
		what := fmt.Sprintf("sender %d, leaf %d", u.Sender, j)
		ps, cs, err := m.ProcessUpdatePath(u.Sender, up, x.ctx)
		if x.ck.fail(what, err) {
			continue
		}
		if int(j) >= len(u.PathSecrets) {
			x.ck.errorf("%s: no expected path secret", what)
		} else {
			x.ck.bytes(what+": path secret", ps, u.PathSecrets[j])
		}
		x.ck.bytes(what+": commit secret", cs, u.CommitSecret)
		x.ck.bytes(what+": tree hash after", m.Tree().TreeHash(), u.TreeHashAfter)
	}
}

// createFreshPath has the sender create a new UpdatePath and every other
// leaf process it to the same commit secret.
func (x *treeKEMRun) createFreshPath(senderLeaf uint32) {
	sender, _ := x.member[senderLeaf]()
	fresh, cs, err := sender.CreateUpdatePath(x.sigs[senderLeaf], x.ctx, nil)
	if x.ck.fail(fmt.Sprintf("sender %d: creating a path", senderLeaf), err) {
		return
	}
	for j, newMember := range x.member {
		if j == senderLeaf {
			continue
		}
		m, _ := newMember()
		what := fmt.Sprintf("sender %d, leaf %d, fresh path", senderLeaf, j)
		_, got, err := m.ProcessUpdatePath(senderLeaf, fresh, x.ctx)
		if x.ck.fail(what, err) {
			continue
		}
		x.ck.bytes(what+": commit secret", got, cs)
	}
}
