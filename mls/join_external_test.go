package mls

import (
	"bytes"
	"errors"
	"testing"
)

// TestJoinExternal has Eve join a three-member group by external Commit,
// from a GroupInfo with the tree inside and with the tree out of band, and
// then resync (rejoin replacing her own leaf).
func TestJoinExternal(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob", "carol")
	alice := cs[0]
	eve := newClient(t, "eve")

	gi, err := alice.g.GroupInfo(GroupInfoOptions{ExternalPub: true, RatchetTree: true})
	if err != nil {
		t.Fatal(err)
	}
	gi = roundTripGroupInfo(t, gi)
	g, msg, err := JoinExternal(eve.cfg, gi, eve.cred(), eve.sig, nil)
	if err != nil {
		t.Fatalf("JoinExternal: %v", err)
	}
	eve.g = g
	if msg.PublicMessage == nil || msg.PublicMessage.Content.Sender.Type != SenderTypeNewMemberCommit {
		t.Fatal("external Commit is not a PublicMessage from a new_member_commit sender")
	}
	res := process(t, msg, cs...)
	if got := res[0].Commit.Epoch; got != eve.g.Epoch() {
		t.Errorf("members moved to epoch %d, Eve is in %d", got, eve.g.Epoch())
	}
	cs = append(cs, eve)
	sameState(t, cs...)
	checkMessaging(t, cs...)

	// Eve loses her state and rejoins from a GroupInfo without the tree
	// (given out of band), removing her old leaf.
	old := eve.g.LeafIndex()
	gi, err = cs[1].g.GroupInfo(GroupInfoOptions{ExternalPub: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := JoinExternal(eve.cfg, gi, eve.cred(), eve.sig, nil); !errors.Is(err, ErrInvalidWelcome) {
		t.Errorf("JoinExternal without any tree = %v, want ErrInvalidWelcome", err)
	}
	g, msg, err = JoinExternal(eve.cfg, gi, eve.cred(), eve.sig, &ExternalJoinOptions{
		Tree: cs[1].g.RatchetTree(), Resync: &old, AuthenticatedData: []byte("resync"),
	})
	if err != nil {
		t.Fatalf("JoinExternal resync: %v", err)
	}
	res = process(t, msg, cs[:3]...)
	if string(res[0].AuthenticatedData) != "resync" {
		t.Errorf("authenticated data = %q", res[0].AuthenticatedData)
	}
	eve.g = g
	if eve.g.LeafIndex() != old {
		t.Errorf("resynced Eve is at leaf %d, want her old leaf %d (leftmost blank after the Remove)", eve.g.LeafIndex(), old)
	}
	sameState(t, cs...)
	checkMessaging(t, cs...)
	if n := len(alice.g.Members()); n != 4 {
		t.Errorf("%d members after the resync, want 4", n)
	}
}

func roundTripGroupInfo(t testing.TB, gi *GroupInfo) *GroupInfo {
	t.Helper()
	m := roundTrip(t, &MLSMessage{Version: ProtocolMLS10, WireFormat: WireFormatGroupInfo, GroupInfo: gi})
	return m.GroupInfo
}

func TestJoinExternalRejects(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob")
	eve := newClient(t, "eve")
	noPub, err := cs[0].g.GroupInfo(GroupInfoOptions{RatchetTree: true})
	if err != nil {
		t.Fatal(err)
	}
	good, err := cs[0].g.GroupInfo(GroupInfoOptions{RatchetTree: true, ExternalPub: true})
	if err != nil {
		t.Fatal(err)
	}
	badSig := roundTripGroupInfo(t, good)
	badSig.Signature[0] ^= 1
	otherEpoch := roundTripGroupInfo(t, good)
	otherEpoch.GroupContext.Epoch++
	blank := uint32(7)
	tests := []struct {
		name string
		gi   *GroupInfo
		opts *ExternalJoinOptions
		want error
	}{
		{"no external_pub", noPub, nil, ErrInvalidWelcome},
		{"bad signature", badSig, nil, ErrInvalidSignature},
		{"changed GroupContext", otherEpoch, nil, ErrInvalidSignature},
		{"resync of a blank leaf", good, &ExternalJoinOptions{Resync: &blank}, ErrInvalidProposal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := JoinExternal(eve.cfg, tt.gi, eve.cred(), eve.sig, tt.opts); !errors.Is(err, tt.want) {
				t.Errorf("JoinExternal = %v, want %v", err, tt.want)
			}
		})
	}
	// A stale GroupInfo (the group moved on) gives a Commit members refuse.
	g, msg, err := JoinExternal(eve.cfg, good, eve.cred(), eve.sig, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = g
	cs[0].commit(t, &CommitOptions{ForcePath: true})
	if _, err := cs[0].g.ProcessMessage(roundTrip(t, msg)); !errors.Is(err, ErrEpochMismatch) {
		t.Errorf("stale external Commit: %v, want ErrEpochMismatch", err)
	}
	// Members reject an external Commit whose confirmation tag is wrong.
	g, msg, err = JoinExternal(eve.cfg, mustGroupInfo(t, cs[0].g), eve.cred(), eve.sig, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = g
	msg.PublicMessage.Auth.ConfirmationTag = bytes.Repeat([]byte{1}, 32)
	if _, err := cs[0].g.ProcessMessage(roundTrip(t, msg)); !errors.Is(err, ErrInvalidCommit) {
		t.Errorf("external Commit with a wrong confirmation tag: %v, want ErrInvalidCommit", err)
	}
}

func mustGroupInfo(t testing.TB, g *Group) *GroupInfo {
	t.Helper()
	gi, err := g.GroupInfo(GroupInfoOptions{RatchetTree: true, ExternalPub: true})
	if err != nil {
		t.Fatal(err)
	}
	return gi
}

// TestExternalPubForms: the external_pub extension is written in the RFC
// 9420 form (Section 12.4.3.2, a length-prefixed HPKEPublicKey) and read in
// it and in ts-mls 1.6.4's bare form; other lengths are malformed.
func TestExternalPubForms(t *testing.T) {
	key := bytes.Repeat([]byte{0xab}, 32)
	ext := ExternalPubExtension(key)
	if len(ext.Data) != 33 || ext.Data[0] != 32 || !bytes.Equal(ext.Data[1:], key) {
		t.Fatalf("ExternalPubExtension wrote %x, want the RFC form 20%x", ext.Data, key)
	}
	for name, data := range map[string][]byte{"RFC": ext.Data, "bare": key} {
		got, err := ParseExternalPub(data)
		if err != nil || !bytes.Equal(got, key) {
			t.Errorf("ParseExternalPub(%s form) = %x, %v; want %x", name, got, err, key)
		}
	}
	for _, n := range []int{0, 31, 34, 64} {
		if _, err := ParseExternalPub(make([]byte, n)); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseExternalPub(%d zero bytes) = %v, want ErrMalformed", n, err)
		}
	}
}

// TestJoinExternalBareExternalPub: a GroupInfo whose external_pub holds the
// bare key, as ts-mls 1.6.4 signs it, lets a client join by external
// Commit that the members accept.
func TestJoinExternalBareExternalPub(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob")
	eve := newClient(t, "eve")
	_, pub, err := cs[0].g.epoch.ExternalKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	gi, err := cs[0].g.signedGroupInfo([]Extension{
		{Type: ExtensionTypeRatchetTree, Data: cs[0].g.tree.Marshal()},
		{Type: ExtensionTypeExternalPub, Data: pub},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, msg, err := JoinExternal(eve.cfg, roundTripGroupInfo(t, gi), eve.cred(), eve.sig, nil)
	if err != nil {
		t.Fatalf("JoinExternal from a bare external_pub: %v", err)
	}
	eve.g = g
	process(t, msg, cs...)
	cs = append(cs, eve)
	sameState(t, cs...)
	checkMessaging(t, cs...)
}
