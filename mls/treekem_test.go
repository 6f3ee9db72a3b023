package mls

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"testing"
)

type treeKEMCase struct {
	CipherSuite             uint16 `json:"cipher_suite"`
	GroupID                 string `json:"group_id"`
	Epoch                   uint64 `json:"epoch"`
	ConfirmedTranscriptHash string `json:"confirmed_transcript_hash"`
	RatchetTree             string `json:"ratchet_tree"`
	LeavesPrivate           []struct {
		Index          uint32 `json:"index"`
		EncryptionPriv string `json:"encryption_priv"`
		SignaturePriv  string `json:"signature_priv"`
		PathSecrets    []struct {
			Node       uint32 `json:"node"`
			PathSecret string `json:"path_secret"`
		} `json:"path_secrets"`
	} `json:"leaves_private"`
	UpdatePaths []struct {
		Sender        uint32            `json:"sender"`
		UpdatePath    string            `json:"update_path"`
		PathSecrets   []json.RawMessage `json:"path_secrets"`
		CommitSecret  string            `json:"commit_secret"`
		TreeHashAfter string            `json:"tree_hash_after"`
	} `json:"update_paths"`
}

// TestTreeKEMVectors runs treekem.cs1.json: every member processes every
// UpdatePath (path secret, commit secret, tree hash after merging), and a
// fresh UpdatePath from each sender is processed by all others (RFC 9420,
// Sections 7.4–7.6).
func TestTreeKEMVectors(t *testing.T) {
	var cases []treeKEMCase
	loadVectors(t, "treekem.cs1.json", &cases)
	if len(cases) == 0 {
		t.Fatal("no cases")
	}
	// The whole file also runs in mls/vectors; here the smaller trees
	// suffice, plus the checks only the package can make.
	cases = cases[:min(len(cases), 6)]
	for i, c := range cases {
		tree, err := ParseRatchetTree(unhex(t, c.RatchetTree))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		ctx := &GroupContext{
			Version: ProtocolMLS10, CipherSuite: CipherSuite(c.CipherSuite),
			GroupID: unhex(t, c.GroupID), Epoch: c.Epoch,
			ConfirmedTranscriptHash: unhex(t, c.ConfirmedTranscriptHash),
		}
		members := map[uint32]func() *TreeKEMMember{}
		sigs := map[uint32]ed25519.PrivateKey{}
		for _, lp := range c.LeavesPrivate {
			secrets := map[uint32][]byte{}
			for _, ps := range lp.PathSecrets {
				secrets[ps.Node] = unhex(t, ps.PathSecret)
			}
			if _, err := NewTreeKEMMember(tree, lp.Index, unhex(t, lp.EncryptionPriv), secrets); err != nil {
				t.Fatalf("case %d leaf %d: %v", i, lp.Index, err)
			}
			members[lp.Index] = func() *TreeKEMMember {
				m, _ := NewTreeKEMMember(tree, lp.Index, unhex(t, lp.EncryptionPriv), secrets)
				return m
			}
			sigs[lp.Index] = ed25519.NewKeyFromSeed(unhex(t, lp.SignaturePriv))
		}
		for _, u := range c.UpdatePaths {
			var up UpdatePath
			if err := decodeAll(unhex(t, u.UpdatePath), &up, "UpdatePath"); err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			for j, newM := range members {
				if j == u.Sender {
					continue
				}
				m := newM()
				ps, cs, err := m.ProcessUpdatePath(u.Sender, &up, ctx)
				if err != nil {
					t.Errorf("case %d sender %d: leaf %d: %v", i, u.Sender, j, err)
					continue
				}
				var want string
				if err := json.Unmarshal(u.PathSecrets[j], &want); err != nil {
					t.Fatalf("case %d: path_secrets[%d]: %v", i, j, err)
				}
				if !bytes.Equal(ps, unhex(t, want)) {
					t.Errorf("case %d sender %d: leaf %d path secret = %x, want %s", i, u.Sender, j, ps, want)
				}
				if !bytes.Equal(cs, unhex(t, u.CommitSecret)) {
					t.Errorf("case %d sender %d: leaf %d commit secret = %x", i, u.Sender, j, cs)
				}
				if th := m.tree.TreeHash(); !bytes.Equal(th, unhex(t, u.TreeHashAfter)) {
					t.Errorf("case %d sender %d: leaf %d tree hash after = %x", i, u.Sender, j, th)
				}
			}

			// A fresh UpdatePath from the same sender.
			sender := members[u.Sender]()
			newUp, cs, err := sender.CreateUpdatePath(sigs[u.Sender], ctx, nil)
			if err != nil {
				t.Fatalf("case %d sender %d: CreateUpdatePath: %v", i, u.Sender, err)
			}
			if err := sender.tree.VerifyParentHashes(); err != nil {
				t.Errorf("case %d sender %d: tree after CreateUpdatePath: %v", i, u.Sender, err)
			}
			for j, newM := range members {
				if j == u.Sender {
					continue
				}
				m := newM()
				_, got, err := m.ProcessUpdatePath(u.Sender, newUp, ctx)
				if err != nil {
					t.Errorf("case %d sender %d: leaf %d on a fresh path: %v", i, u.Sender, j, err)
					continue
				}
				if !bytes.Equal(got, cs) {
					t.Errorf("case %d sender %d: leaf %d commit secret %x, creator's %x", i, u.Sender, j, got, cs)
				}
				if !bytes.Equal(m.tree.TreeHash(), sender.tree.TreeHash()) {
					t.Errorf("case %d sender %d: leaf %d tree differs from the creator's", i, u.Sender, j)
				}
			}
		}
	}
}

// TestTreeKEMRejects checks UpdatePaths the vectors do not cover: a bad
// leaf signature, a wrong node key, a missing node and a wrong context.
func TestTreeKEMRejects(t *testing.T) {
	var cases []treeKEMCase
	loadVectors(t, "treekem.cs1.json", &cases)
	c := cases[len(cases)-1]
	tree, err := ParseRatchetTree(unhex(t, c.RatchetTree))
	if err != nil {
		t.Fatal(err)
	}
	ctx := &GroupContext{Version: ProtocolMLS10, CipherSuite: 1, GroupID: unhex(t, c.GroupID), Epoch: c.Epoch,
		ConfirmedTranscriptHash: unhex(t, c.ConfirmedTranscriptHash)}
	u := c.UpdatePaths[0]
	var receiver = c.LeavesPrivate[0]
	if receiver.Index == u.Sender {
		receiver = c.LeavesPrivate[1]
	}
	secrets := map[uint32][]byte{}
	for _, ps := range receiver.PathSecrets {
		secrets[ps.Node] = unhex(t, ps.PathSecret)
	}
	parse := func() *UpdatePath {
		var up UpdatePath
		if err := decodeAll(unhex(t, u.UpdatePath), &up, "UpdatePath"); err != nil {
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
		m, err := NewTreeKEMMember(tree, receiver.Index, unhex(t, receiver.EncryptionPriv), secrets)
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
