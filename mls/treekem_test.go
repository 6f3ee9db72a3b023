package mls

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"testing"

	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// treeKEMCase is a treekem.cs1.json case with its tree, context and the
// private state of its leaves.
type treeKEMCase struct {
	v       vectorfmt.TreeKEM
	tree    *RatchetTree
	ctx     *GroupContext
	members map[uint32]func() *TreeKEMMember
	sigs    map[uint32]ed25519.PrivateKey
}

func newTreeKEMCase(t *testing.T, v vectorfmt.TreeKEM) *treeKEMCase {
	t.Helper()
	tree, err := ParseRatchetTree(v.RatchetTree)
	if err != nil {
		t.Fatal(err)
	}
	c := &treeKEMCase{v: v, tree: tree, members: map[uint32]func() *TreeKEMMember{}, sigs: map[uint32]ed25519.PrivateKey{},
		ctx: &GroupContext{
			Version: ProtocolMLS10, CipherSuite: CipherSuite(v.CipherSuite),
			GroupID: v.GroupID, Epoch: v.Epoch, ConfirmedTranscriptHash: v.ConfirmedTranscriptHash,
		}}
	for _, lp := range v.LeavesPrivate {
		secrets := map[uint32][]byte{}
		for _, ps := range lp.PathSecrets {
			secrets[ps.Node] = ps.PathSecret
		}
		if _, err := NewTreeKEMMember(tree, lp.Index, lp.EncryptionPriv, secrets); err != nil {
			t.Fatalf("leaf %d: %v", lp.Index, err)
		}
		c.members[lp.Index] = func() *TreeKEMMember {
			m, _ := NewTreeKEMMember(tree, lp.Index, lp.EncryptionPriv, secrets)
			return m
		}
		c.sigs[lp.Index] = ed25519.NewKeyFromSeed(lp.SignaturePriv)
	}
	return c
}

// TestTreeKEMVectors runs treekem.cs1.json: every member processes every
// UpdatePath (path secret, commit secret, tree hash after merging), and a
// fresh UpdatePath from each sender is processed by all others (RFC 9420,
// Sections 7.4–7.6).
func TestTreeKEMVectors(t *testing.T) {
	cases := vectorCases[vectorfmt.TreeKEM](t, "treekem.cs1.json")
	// The whole file also runs in mls/vectors; here the smaller trees
	// suffice, plus the checks only the package can make.
	cases = cases[:min(len(cases), 6)]
	for i, v := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			c := newTreeKEMCase(t, v)
			for _, u := range v.UpdatePaths {
				var up UpdatePath
				if err := decodeAll(u.UpdatePath, &up, "UpdatePath"); err != nil {
					t.Fatal(err)
				}
				c.processVectorPath(t, u, &up)
				c.processFreshPath(t, u.Sender)
			}
		})
	}
}

// processVectorPath has every leaf but the sender process the vector's
// UpdatePath u and compares what it derives with the vector's values.
func (c *treeKEMCase) processVectorPath(t *testing.T, u vectorfmt.TreeKEMUpdatePath, up *UpdatePath) {
	t.Helper()
	for j, newM := range c.members {
		if j == u.Sender {
			continue
		}
		m := newM()
		ps, cs, err := m.ProcessUpdatePath(u.Sender, up, c.ctx)
		if err != nil {
			t.Errorf("sender %d: leaf %d: %v", u.Sender, j, err)
			continue
		}
		if !bytes.Equal(ps, u.PathSecrets[j]) {
			t.Errorf("sender %d: leaf %d path secret = %x, want %x", u.Sender, j, ps, u.PathSecrets[j])
		}
		if !bytes.Equal(cs, u.CommitSecret) {
			t.Errorf("sender %d: leaf %d commit secret = %x", u.Sender, j, cs)
		}
		if th := m.tree.TreeHash(); !bytes.Equal(th, u.TreeHashAfter) {
			t.Errorf("sender %d: leaf %d tree hash after = %x", u.Sender, j, th)
		}
	}
}

// processFreshPath has sender create a fresh UpdatePath, which every other
// leaf processes to the same commit secret and tree.
func (c *treeKEMCase) processFreshPath(t *testing.T, senderLeaf uint32) {
	t.Helper()
	sender := c.members[senderLeaf]()
	newUp, cs, err := sender.CreateUpdatePath(c.sigs[senderLeaf], c.ctx, nil)
	if err != nil {
		t.Fatalf("sender %d: CreateUpdatePath: %v", senderLeaf, err)
	}
	if err := sender.tree.VerifyParentHashes(); err != nil {
		t.Errorf("sender %d: tree after CreateUpdatePath: %v", senderLeaf, err)
	}
	for j, newM := range c.members {
		if j == senderLeaf {
			continue
		}
		m := newM()
		_, got, err := m.ProcessUpdatePath(senderLeaf, newUp, c.ctx)
		if err != nil {
			t.Errorf("sender %d: leaf %d on a fresh path: %v", senderLeaf, j, err)
			continue
		}
		if !bytes.Equal(got, cs) {
			t.Errorf("sender %d: leaf %d commit secret %x, creator's %x", senderLeaf, j, got, cs)
		}
		if !bytes.Equal(m.tree.TreeHash(), sender.tree.TreeHash()) {
			t.Errorf("sender %d: leaf %d tree differs from the creator's", senderLeaf, j)
		}
	}
}

// TestTreeKEMRejects checks UpdatePaths the vectors do not cover: a bad
// leaf signature, a wrong node key, a missing node and a wrong context.
func TestTreeKEMRejects(t *testing.T) {
	cases := vectorCases[vectorfmt.TreeKEM](t, "treekem.cs1.json")
	c := cases[len(cases)-1]
	tree, err := ParseRatchetTree(c.RatchetTree)
	if err != nil {
		t.Fatal(err)
	}
	ctx := &GroupContext{Version: ProtocolMLS10, CipherSuite: 1, GroupID: c.GroupID, Epoch: c.Epoch,
		ConfirmedTranscriptHash: c.ConfirmedTranscriptHash}
	u := c.UpdatePaths[0]
	var receiver = c.LeavesPrivate[0]
	if receiver.Index == u.Sender {
		receiver = c.LeavesPrivate[1]
	}
	secrets := map[uint32][]byte{}
	for _, ps := range receiver.PathSecrets {
		secrets[ps.Node] = ps.PathSecret
	}
	parse := func() *UpdatePath {
		var up UpdatePath
		if err := decodeAll(u.UpdatePath, &up, "UpdatePath"); err != nil {
			t.Fatal(err)
		}
		return &up
	}
	tests := []struct {
		name   string
		tamper func(up *UpdatePath, ctx *GroupContext)
		want   error
	}{
		{"leaf signature", func(up *UpdatePath, _ *GroupContext) { up.LeafNode.Signature[0] ^= 1 }, ErrInvalidSignature},
		{"node key", func(up *UpdatePath, _ *GroupContext) { up.Nodes[len(up.Nodes)-1].EncryptionKey[0] ^= 1 }, ErrInvalidUpdatePath},
		{"missing node", func(up *UpdatePath, _ *GroupContext) { up.Nodes = up.Nodes[:len(up.Nodes)-1] }, ErrInvalidUpdatePath},
		{"other context", func(_ *UpdatePath, ctx *GroupContext) { ctx.Epoch++ }, ErrDecryption},
	}
	for _, tt := range tests {
		m, err := NewTreeKEMMember(tree, receiver.Index, receiver.EncryptionPriv, secrets)
		if err != nil {
			t.Fatal(err)
		}
		up, cc := parse(), ctx.clone()
		tt.tamper(up, cc)
		if _, _, err := m.ProcessUpdatePath(u.Sender, up, cc); !errors.Is(err, tt.want) {
			t.Errorf("%s: ProcessUpdatePath = %v, want %v", tt.name, err, tt.want)
		}
	}
}
