//go:build integration

package interop

import (
	"bytes"
	"context"
	"testing"

	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/test/interop/tsmls"
)

// External joins (RFC 9420, Section 12.4.3.2) across the stacks, with
// package mls on the Torpor side: a Torpor client joins a ts-mls group from
// its GroupInfo, and a ts-mls client joins a Torpor group from ours. ts-mls
// 1.6.4 writes external_pub as the bare key; mls accepts that form and
// writes the RFC form, which the peer reads for ts-mls (docs/interop.md).

// tsGroup is a group of ts-mls actors alice and bob.
func tsGroup(t *testing.T, ctx context.Context, p *tsmls.Peer) (alice, bob *tsmls.Actor) {
	t.Helper()
	var err error
	if alice, err = p.NewActor(ctx, "alice", seedOf("ext alice"), ""); err != nil {
		t.Fatal(err)
	}
	if bob, err = p.NewActor(ctx, "bob", seedOf("ext bob"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.CreateGroup(ctx, []byte("external join, ts-mls group")); err != nil {
		t.Fatal(err)
	}
	kp, err := bob.KeyPackage(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := alice.Commit(ctx, tsmls.CommitOptions{Add: []tsmls.Hex{kp.Bytes}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Join(ctx, c.Welcome, c.RatchetTree); err != nil {
		t.Fatal(err)
	}
	return alice, bob
}

// agreeExternal checks that a ts-mls member's summary and the Torpor group agree on
// epoch, epoch authenticator, tree hash and exporter.
func agreeExternal(t *testing.T, s tsmls.Summary, g *mls.Group) {
	t.Helper()
	ex, err := g.Export(exporter.Label, exporter.Context, exporter.Length)
	if err != nil {
		t.Fatal(err)
	}
	if s.Epoch != g.Epoch() || !bytes.Equal(s.EpochAuthenticator, g.EpochAuthenticator()) ||
		!bytes.Equal(s.TreeHash, g.GroupContext().TreeHash) || !bytes.Equal(s.Exporter, ex) {
		t.Fatalf("ts-mls epoch %d authenticator %x tree %x exporter %x; Torpor epoch %d authenticator %x tree %x exporter %x",
			s.Epoch, s.EpochAuthenticator, s.TreeHash, s.Exporter, g.Epoch(), g.EpochAuthenticator(), g.GroupContext().TreeHash, ex)
	}
}

// talkExternal sends one application message each way between a ts-mls member and
// the Torpor group.
func talkExternal(t *testing.T, ctx context.Context, a *tsmls.Actor, g *mls.Group) {
	t.Helper()
	m, err := g.EncryptApplication([]byte("from torpor"), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Process(ctx, mlsMarshal(t, m))
	if err != nil || string(got.ApplicationData) != "from torpor" {
		t.Fatalf("ts-mls %s processing Torpor's message = %q, %v", a.Name, got.ApplicationData, err)
	}
	ct, err := a.Encrypt(ctx, []byte("from ts-mls"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pm := parseMessage(t, ct)
	res, err := g.ProcessMessage(pm)
	if err != nil || string(res.ApplicationData) != "from ts-mls" {
		t.Fatalf("Torpor processing ts-mls %s's message = %v", a.Name, err)
	}
}

func parseMessage(t *testing.T, b []byte) *mls.MLSMessage {
	t.Helper()
	m, err := mls.ParseMLSMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestExternalJoinTorporIntoTSMLS: a Torpor client joins a group of two
// ts-mls members by external Commit from alice's GroupInfo (bare
// external_pub, ratchet_tree extension); both members process the Commit.
func TestExternalJoinTorporIntoTSMLS(t *testing.T) {
	ctx := context.Background()
	p := tsmls.StartT(t, &tsmls.Config{Exporter: exporter})
	alice, bob := tsGroup(t, ctx, p)
	giBytes, err := alice.GroupInfo(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	gi := parseMessage(t, giBytes).GroupInfo
	if gi == nil {
		t.Fatal("alice's GroupInfo is not an MLSMessage group_info")
	}
	if pub := externalPubData(gi); len(pub) != 32 {
		t.Fatalf("ts-mls wrote external_pub as %d bytes; docs/interop.md says it writes the bare 32-byte key", len(pub))
	}
	carol := newKey(t, "ext carol")
	g, commit, err := mls.JoinExternal(torporMLSConfig(), gi, session.NewCredential(carol.DID()), carol.Ed25519(), nil)
	if err != nil {
		t.Fatalf("JoinExternal from ts-mls's GroupInfo: %v", err)
	}
	for _, a := range []*tsmls.Actor{alice, bob} {
		res, err := a.Process(ctx, mlsMarshal(t, commit))
		if err != nil {
			t.Fatalf("ts-mls %s processing Torpor's external Commit: %v", a.Name, err)
		}
		if res.Kind != "commit" || len(res.Summary.Members) != 3 {
			t.Fatalf("ts-mls %s: %s, %d members", a.Name, res.Kind, len(res.Summary.Members))
		}
		agreeExternal(t, res.Summary, g)
	}
	talkExternal(t, ctx, alice, g)
	talkExternal(t, ctx, bob, g)
}

// TestExternalJoinTSMLSIntoTorpor: a ts-mls client joins a Torpor group
// from its GroupInfo (RFC form of external_pub, tree out of band); the
// Torpor member processes ts-mls's external Commit.
func TestExternalJoinTSMLSIntoTorpor(t *testing.T) {
	ctx := context.Background()
	p := tsmls.StartT(t, &tsmls.Config{Exporter: exporter})
	alice := newKey(t, "ext torpor alice")
	g, err := mls.NewGroup(torporMLSConfig(), []byte("external join, Torpor group"), session.NewCredential(alice.DID()), alice.Ed25519(), nil)
	if err != nil {
		t.Fatal(err)
	}
	gi, err := g.GroupInfo(mls.GroupInfoOptions{ExternalPub: true})
	if err != nil {
		t.Fatal(err)
	}
	if pub := externalPubData(gi); len(pub) != 33 || pub[0] != 32 {
		t.Fatalf("Torpor wrote external_pub as %x, want the RFC form (length-prefixed key)", pub)
	}
	giBytes := mlsMarshal(t, &mls.MLSMessage{Version: mls.ProtocolMLS10, WireFormat: mls.WireFormatGroupInfo, GroupInfo: gi})
	dave, err := p.NewActor(ctx, "dave", seedOf("ext dave"), "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := dave.JoinExternal(ctx, giBytes, g.RatchetTree().Marshal())
	if err != nil {
		t.Fatalf("ts-mls JoinExternal from Torpor's GroupInfo: %v", err)
	}
	pm, err := g.ProcessMessage(parseMessage(t, res.Commit))
	if err != nil {
		t.Fatalf("Torpor processing ts-mls's external Commit: %v", err)
	}
	if pm.Commit == nil || len(g.Members()) != 2 {
		t.Fatalf("after ts-mls's external Commit: %+v, members %v", pm.Commit, g.Members())
	}
	agreeExternal(t, res.Summary, g)
	talkExternal(t, ctx, dave, g)
}

// externalPubData returns the body of gi's external_pub extension.
func externalPubData(gi *mls.GroupInfo) []byte {
	for _, e := range gi.Extensions {
		if e.Type == mls.ExtensionTypeExternalPub {
			return e.Data
		}
	}
	return nil
}
