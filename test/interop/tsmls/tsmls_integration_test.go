//go:build integration

package tsmls

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/torpor-dev/torpor/did"
)

// These tests prove the harness against ts-mls alone: three (later four)
// ts-mls members drive every operation the Go-and-ts-mls scenarios of
// this package use, and after each step every member agrees on epoch,
// epoch authenticator, tree hash, members and an exporter value.

var testExporter = &Exporter{Label: "torpor interop", Context: Hex("agree"), Length: 32}

const (
	wireFormatPublic    = 1
	wireFormatPrivate   = 2
	wireFormatWelcome   = 3
	wireFormatGroupInfo = 4
	wireFormatKP        = 5
)

type member struct {
	*Actor
	key *did.PrivateKey
}

// newMember creates an actor from a deterministic seed and checks that the
// peer derives the same public key and did:key as the did package.
func newMember(t *testing.T, p *Peer, name string, seedByte byte) member {
	t.Helper()
	seed := bytes.Repeat([]byte{seedByte}, 32)
	key, err := did.NewKeyFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.NewActor(context.Background(), name, seed, "")
	if err != nil {
		t.Fatalf("NewActor(%s) = %v", name, err)
	}
	if !bytes.Equal(a.SignatureKey, key.Public()) {
		t.Fatalf("NewActor(%s) key = %x, want %x", name, a.SignatureKey, []byte(key.Public()))
	}
	if a.DID != key.DID().String() || a.Identity != a.DID {
		t.Fatalf("NewActor(%s) DID = %q identity = %q, want both %q", name, a.DID, a.Identity, key.DID())
	}
	return member{a, key}
}

// must(f())(t, what) ends the test with what and f's error, if any, else
// returns f's value.
func must[T any](v T, err error) func(t testing.TB, what string) T {
	return func(t testing.TB, what string) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

// agree checks that all members see the same group, and returns the shared
// summary.
func agree(t *testing.T, step string, ms ...member) Summary {
	t.Helper()
	var first Summary
	for i, m := range ms {
		s := must(m.State(context.Background(), nil))(t, step+": State("+m.Name+")")
		if s.Active != "active" {
			t.Fatalf("%s: %s is %s", step, m.Name, s.Active)
		}
		if len(s.Exporter) != testExporter.Length || len(s.EpochAuthenticator) != 32 || len(s.TreeHash) != 32 {
			t.Fatalf("%s: %s summary lacks values: %+v", step, m.Name, s)
		}
		if i == 0 {
			first = s
			continue
		}
		// Everything but the member's own position is common to the group.
		s.OwnLeafIndex = first.OwnLeafIndex
		if diff := cmp.Diff(first, s); diff != "" {
			t.Fatalf("%s: %s and %s disagree (-%s +%s):\n%s", step, ms[0].Name, m.Name, ms[0].Name, m.Name, diff)
		}
	}
	return first
}

func startPeer(t *testing.T) *Peer {
	t.Helper()
	return StartT(t, &Config{Exporter: testExporter})
}

func TestHello(t *testing.T) {
	p := startPeer(t)
	h := must(p.Hello(context.Background()))(t, "Hello")
	if h.TSMLS != Version || h.CipherSuite != "MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519" {
		t.Errorf("Hello() = %+v, want ts-mls %s with suite 1", h, Version)
	}
	if h.PaddingConfig.Kind != "padUntilLength" || h.PaddingConfig.PadUntilLength != 256 {
		t.Errorf("Hello().PaddingConfig = %+v, want padUntilLength 256", h.PaddingConfig)
	}
	if h.DefaultLifetime != (Lifetime{"0", "9223372036854775807"}) {
		t.Errorf("Hello().DefaultLifetime = %+v, want 0 … 2^63-1", h.DefaultLifetime)
	}
}

// TestKeyPackageBytes checks the byte facts Torpor's KeyPackage pool and
// credential binding rely on.
func TestKeyPackageBytes(t *testing.T) {
	p := startPeer(t)
	alice := newMember(t, p, "alice", 1)
	kp := must(alice.KeyPackage(context.Background(), nil))(t, "KeyPackage")
	if !bytes.HasPrefix(kp.Bytes, []byte{0x00, 0x01, 0x00, 0x05}) {
		t.Fatalf("KeyPackage starts %x, want 0001 0005 (mls10, mls_key_package)", kp.Bytes[:4])
	}
	_, _, body, err := mlsMessage(kp.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseKeyPackage(body)
	if err != nil {
		t.Fatalf("parseKeyPackage: %v", err)
	}
	if got.version != 1 || got.cipherSuite != 1 || got.leafNodeSource != 1 {
		t.Errorf("KeyPackage version %d suite %d source %d, want 1 1 1", got.version, got.cipherSuite, got.leafNodeSource)
	}
	if string(got.identity) != alice.key.DID().String() {
		t.Errorf("credential identity = %q, want the DID %q", got.identity, alice.key.DID())
	}
	if !alice.key.DID().MatchesKey(got.signatureKey) {
		t.Errorf("signature_key %x does not match the DID", got.signatureKey)
	}
	if got.notBefore != 0 || got.notAfter != 1<<63-1 {
		t.Errorf("lifetime = %d…%d, want 0…2^63-1", got.notBefore, got.notAfter)
	}
	if !contains(got.capabilityCredentials, 1) || !contains(got.capabilityCipherSuites, 1) {
		t.Errorf("capabilities credentials %x suites %x, want basic and suite 1 listed", got.capabilityCredentials, got.capabilityCipherSuites)
	}
	if len(got.initKey) != 32 || len(got.encryptionKey) != 32 || len(got.signatureKey) != 32 || len(got.leafSignature) != 64 || len(got.kpSigned) != 64 {
		t.Errorf("key or signature sizes: init %d enc %d sig key %d leaf sig %d kp sig %d, want 32 32 32 64 64",
			len(got.initKey), len(got.encryptionKey), len(got.signatureKey), len(got.leafSignature), len(got.kpSigned))
	}

	// A custom lifetime goes through, and an explicit identity overrides the
	// DID (so that tests can present a mismatched credential).
	kp = must(alice.KeyPackage(context.Background(), LifetimeOf(1000, 2000)))(t, "KeyPackage(lifetime)")
	_, _, body, _ = mlsMessage(kp.Bytes)
	if got, err = parseKeyPackage(body); err != nil || got.notBefore != 1000 || got.notAfter != 2000 {
		t.Errorf("KeyPackage(lifetime 1000…2000) = %+v, %v", got, err)
	}
	mallory := must(p.NewActor(context.Background(), "mallory", bytes.Repeat([]byte{9}, 32), alice.DID))(t, "NewActor(mallory)")
	kp = must(mallory.KeyPackage(context.Background(), nil))(t, "KeyPackage(mallory)")
	_, _, body, _ = mlsMessage(kp.Bytes)
	if got, err = parseKeyPackage(body); err != nil || string(got.identity) != alice.DID || alice.key.DID().MatchesKey(got.signatureKey) {
		t.Errorf("mismatched KeyPackage: identity %q key %x, %v; want alice's DID with mallory's key", got.identity, got.signatureKey, err)
	}
}

// TestPaddingDefault checks that ts-mls pads PrivateMessage content up to
// 256 bytes and no further: PrivateMessageContent for application data is
// application_data<V> || signature<V> || padding (RFC 9420 Section 6.3.1),
// sealed with a 16-byte AES-GCM tag. (The 64-byte signature takes a 2-byte
// length: 64 is past the 1-byte varint range.)
func TestPaddingDefault(t *testing.T) {
	p := startPeer(t)
	alice, bob := pair(t, p)
	tests := []struct {
		name string
		size int
	}{
		{"5 bytes", 5},
		{"188 bytes, 256 before padding", 188},
		{"189 bytes, 257 before padding", 189},
		{"1 KiB", 1024},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := must(alice.Encrypt(context.Background(), bytes.Repeat([]byte{'x'}, tt.size), nil))(t, "Encrypt")
			_, wf, body, err := mlsMessage(msg)
			if err != nil || wf != wireFormatPrivate {
				t.Fatalf("application message wire format %d, %v; want PrivateMessage", wf, err)
			}
			pm, err := parsePrivateMessage(body)
			if err != nil {
				t.Fatal(err)
			}
			content := varintLen(tt.size) + tt.size + varintLen(64) + 64
			want := max(content, 256) + 16
			if len(pm.ciphertext) != want || pm.contentType != 1 {
				t.Errorf("ciphertext of %d-byte message = %d bytes (content type %d), want %d (content %d padded to at least 256, + tag)",
					tt.size, len(pm.ciphertext), pm.contentType, want, content)
			}
			got := must(bob.Process(context.Background(), msg))(t, "Process")
			if len(got.ApplicationData) != tt.size {
				t.Errorf("bob decrypted %d bytes, want %d", len(got.ApplicationData), tt.size)
			}
		})
	}
}

// pair makes a two-member group alice+bob with ts-mls defaults.
func pair(t *testing.T, p *Peer) (member, member) {
	t.Helper()
	ctx := context.Background()
	alice, bob := newMember(t, p, "alice", 1), newMember(t, p, "bob", 2)
	kp := must(bob.KeyPackage(ctx, nil))(t, "KeyPackage(bob)")
	must(alice.CreateGroup(ctx, []byte("pair")))(t, "CreateGroup")
	c := must(alice.Commit(ctx, CommitOptions{Add: []Hex{kp.Bytes}}))(t, "Commit(add bob)")
	must(bob.Join(ctx, c.Welcome, c.RatchetTree))(t, "Join(bob)")
	agree(t, "pair", alice, bob)
	return alice, bob
}

func contains(list []uint16, v uint16) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func wireFormat(t *testing.T, what string, msg []byte, want uint16) {
	t.Helper()
	v, wf, _, err := mlsMessage(msg)
	if err != nil || v != 1 || wf != want {
		t.Fatalf("%s: version %d wire format %d (%v), want mls10 and %d", what, v, wf, err, want)
	}
}

// send encrypts at from and checks every receiver decrypts it and names
// from as the sender.
func send(t *testing.T, from member, text string, to ...member) {
	t.Helper()
	ctx := context.Background()
	msg := must(from.Encrypt(ctx, []byte(text), nil))(t, "Encrypt("+from.Name+")")
	wireFormat(t, "application message", msg, wireFormatPrivate)
	for _, r := range to {
		got := must(r.Process(ctx, msg))(t, "Process("+r.Name+")")
		if got.Kind != "application" || string(got.ApplicationData) != text {
			t.Fatalf("%s got %s %q, want application %q", r.Name, got.Kind, got.ApplicationData, text)
		}
		if got.Sender == nil || got.Sender.Identity != from.DID || !bytes.Equal(got.Sender.SignatureKey, from.SignatureKey) {
			t.Fatalf("%s: sender = %+v, want %s", r.Name, got.Sender, from.DID)
		}
	}
}

// process delivers a handshake message to receivers and checks its kind.
func process(t *testing.T, msg []byte, kind string, to ...member) {
	t.Helper()
	for _, r := range to {
		got := must(r.Process(context.Background(), msg))(t, "Process("+r.Name+")")
		if got.Kind != kind {
			t.Fatalf("%s processed a %s, want %s", r.Name, got.Kind, kind)
		}
	}
}

func leafOf(t *testing.T, s Summary, m member) Member {
	t.Helper()
	for _, l := range s.Members {
		if l.Identity == m.DID {
			return l
		}
	}
	t.Fatalf("%s not among the members %+v", m.Name, s.Members)
	return Member{}
}

// TestThreeMembers runs the life of a group on ts-mls alone through the
// harness: adds (tree out of band and in the Welcome), messages both ways,
// a self-update, an Update proposal committed by reference by another
// member, a remove, save and restore, and an external join.
func TestThreeMembers(t *testing.T) {
	ctx := context.Background()
	p := startPeer(t)
	alice, bob, carol := newMember(t, p, "alice", 1), newMember(t, p, "bob", 2), newMember(t, p, "carol", 3)
	addBobAndCarol(t, alice, bob, carol)

	// Application messages both ways.
	send(t, alice, "hello from alice", bob, carol)
	send(t, carol, "hello from carol", alice, bob)
	send(t, bob, "hello from bob", alice, carol)
	agree(t, "messages", alice, bob, carol)

	// bob updates himself: an empty commit carries a path.
	before := agree(t, "before update", alice, bob, carol)
	c := must(bob.Commit(ctx, CommitOptions{Update: true}))(t, "Commit(bob update)")
	process(t, c.Commit, "commit", alice, carol)
	after := agree(t, "bob update", alice, bob, carol)
	if bytes.Equal(leafOf(t, before, bob).EncryptionKey, leafOf(t, after, bob).EncryptionKey) {
		t.Error("bob's leaf encryption key unchanged by his update")
	}

	afterCarol := carolUpdatesByReference(t, alice, bob, carol, after)
	removeCarol(t, alice, bob, carol, afterCarol)
	restoreBobAndJoinDave(t, p, alice, bob)
}

// addBobAndCarol has alice create the group and add bob (tree out of band)
// and then carol (tree in the Welcome).
func addBobAndCarol(t *testing.T, alice, bob, carol member) {
	t.Helper()
	ctx := context.Background()
	// Create, add bob with ts-mls defaults: commit as PrivateMessage, tree
	// out of band.
	s := must(alice.CreateGroup(ctx, []byte("torpor-interop")))(t, "CreateGroup")
	if s.Epoch != 0 || len(s.Members) != 1 || s.Members[0].Identity != alice.DID {
		t.Fatalf("new group = %+v", s)
	}
	kpBob := must(bob.KeyPackage(ctx, nil))(t, "KeyPackage(bob)")
	c := must(alice.Commit(ctx, CommitOptions{Add: []Hex{kpBob.Bytes}}))(t, "Commit(add bob)")
	wireFormat(t, "default commit", c.Commit, wireFormatPrivate)
	wireFormat(t, "welcome", c.Welcome, wireFormatWelcome)
	if _, err := bob.Join(ctx, c.Welcome, nil); err == nil {
		t.Fatal("Join without the out-of-band tree succeeded; ts-mls's Welcome should carry no ratchet_tree by default")
	}
	must(bob.Join(ctx, c.Welcome, c.RatchetTree))(t, "Join(bob)")
	if s := agree(t, "add bob", alice, bob); s.Epoch != 1 || len(s.Members) != 2 {
		t.Fatalf("after add bob: %+v", s)
	}

	// Add carol with the tree in the Welcome.
	kpCarol := must(carol.KeyPackage(ctx, nil))(t, "KeyPackage(carol)")
	if _, err := alice.Commit(ctx, CommitOptions{Add: []Hex{kpCarol.Bytes}, Update: true}); err == nil {
		t.Fatal("Commit(add, update) succeeded; ts-mls sends no path with Adds only and the peer must refuse")
	}
	c = must(alice.Commit(ctx, CommitOptions{Add: []Hex{kpCarol.Bytes}, RatchetTreeExtension: true}))(t, "Commit(add carol)")
	process(t, c.Commit, "commit", bob)
	must(carol.Join(ctx, c.Welcome, nil))(t, "Join(carol)")
	agree(t, "add carol", alice, bob, carol)
}

// carolUpdatesByReference: carol proposes an Update; alice commits it by
// reference, as a PublicMessage. after is the summary before; it returns
// the summary after.
func carolUpdatesByReference(t *testing.T, alice, bob, carol member, after Summary) Summary {
	t.Helper()
	ctx := context.Background()
	pr := must(carol.Propose(ctx, ProposeUpdate(), false))(t, "Propose(carol update)")
	wireFormat(t, "update proposal", pr.Message, wireFormatPrivate)
	if len(pr.Ref) != 32 {
		t.Fatalf("proposal ref = %x, want 32 bytes", pr.Ref)
	}
	process(t, pr.Message, "proposal", alice, bob)
	c := must(alice.Commit(ctx, CommitOptions{PublicMessage: true}))(t, "Commit(alice, by reference)")
	wireFormat(t, "public commit", c.Commit, wireFormatPublic)
	for _, r := range []member{bob, carol} {
		got := must(r.Process(ctx, c.Commit))(t, "Process("+r.Name+")")
		if got.Kind != "commit" || !cmp.Equal(got.Proposals, []string{"update"}) || got.Sender == nil || got.Sender.Identity != alice.DID {
			t.Fatalf("%s processed %+v, want alice's commit of one update", r.Name, got)
		}
	}
	afterCarol := agree(t, "carol update by reference", alice, bob, carol)
	if bytes.Equal(leafOf(t, after, carol).EncryptionKey, leafOf(t, afterCarol, carol).EncryptionKey) {
		t.Error("carol's leaf encryption key unchanged by her committed Update")
	}
	send(t, carol, "carol after her update", alice, bob)
	return afterCarol
}

// removeCarol: bob proposes removing carol as a PublicMessage; carol
// commits nothing, alice commits it by reference. carol can no longer
// read the group's messages; bob can.
func removeCarol(t *testing.T, alice, bob, carol member, afterCarol Summary) {
	t.Helper()
	ctx := context.Background()
	carolLeaf := leafOf(t, afterCarol, carol).LeafIndex
	pr := must(bob.Propose(ctx, ProposeRemove(carolLeaf), true))(t, "Propose(bob remove carol)")
	wireFormat(t, "remove proposal", pr.Message, wireFormatPublic)
	process(t, pr.Message, "proposal", alice, carol)
	c := must(alice.Commit(ctx, CommitOptions{}))(t, "Commit(alice remove carol)")
	process(t, c.Commit, "commit", bob, carol)
	s := agree(t, "remove carol", alice, bob)
	if len(s.Members) != 2 {
		t.Fatalf("after remove: members %+v", s.Members)
	}
	gone := must(carol.State(ctx, nil))(t, "State(carol)")
	if gone.Active != "removedFromGroup" {
		t.Fatalf("carol after removal: %s", gone.Active)
	}
	msg := must(alice.Encrypt(ctx, []byte("carol cannot read this"), nil))(t, "Encrypt(alice)")
	if _, err := carol.Process(ctx, msg); err == nil {
		t.Fatal("removed carol decrypted a message of the next epoch")
	}
	must(bob.Process(ctx, msg))(t, "Process(bob)")
}

// restoreBobAndJoinDave saves and restores bob, then has dave join by
// external commit.
func restoreBobAndJoinDave(t *testing.T, p *Peer, alice, bob member) {
	t.Helper()
	ctx := context.Background()
	// Save and restore bob: same summary, and he still decrypts.
	saved := must(bob.Save(ctx))(t, "Save(bob)")
	restored := must(bob.Restore(ctx, saved))(t, "Restore(bob)")
	s := agree(t, "restore bob", alice, bob)
	restored.OwnLeafIndex = s.OwnLeafIndex
	if diff := cmp.Diff(s, restored); diff != "" {
		t.Fatalf("restored summary differs:\n%s", diff)
	}
	send(t, alice, "after restore", bob)

	// dave joins by external commit from alice's GroupInfo.
	dave := newMember(t, p, "dave", 4)
	gi := must(alice.GroupInfo(ctx, true))(t, "GroupInfo")
	wireFormat(t, "group info", gi, wireFormatGroupInfo)
	j := must(dave.JoinExternal(ctx, gi, nil))(t, "JoinExternal(dave)")
	wireFormat(t, "external commit", j.Commit, wireFormatPublic)
	process(t, j.Commit, "commit", alice, bob)
	agree(t, "external join", alice, bob, dave)
	send(t, dave, "dave is in", alice, bob)
}

// TestErrorsDoNotEndThePeer sends bad requests and bad MLS input and checks
// each is an error answer and the peer keeps working.
func TestErrorsDoNotEndThePeer(t *testing.T) {
	ctx := context.Background()
	p := startPeer(t)
	alice, bob := pair(t, p)
	kp := must(bob.KeyPackage(ctx, nil))(t, "KeyPackage")
	msg := must(alice.Encrypt(ctx, []byte("once"), nil))(t, "Encrypt")
	corrupt := bytes.Clone(msg)
	corrupt[len(corrupt)-1] ^= 1
	tests := []struct {
		name     string
		call     func() error
		wantName string
	}{
		{"unknown op", func() error { return p.call(ctx, "frobnicate", nil, nil) }, "BadRequest"},
		{"unknown actor", func() error { _, err := (&Actor{p: p, Name: "nobody"}).State(ctx, nil); return err }, "BadRequest"},
		{"duplicate actor", func() error { _, err := p.NewActor(ctx, "alice", nil, ""); return err }, "BadRequest"},
		{"short seed", func() error { _, err := p.NewActor(ctx, "x", []byte{1}, ""); return err }, "BadRequest"},
		{"not an MLSMessage", func() error { _, err := bob.Process(ctx, []byte{1, 2, 3}); return err }, "BadRequest"},
		{"trailing bytes", func() error { _, err := bob.Process(ctx, append(bytes.Clone(msg), 0)); return err }, "BadRequest"},
		{"KeyPackage as message", func() error { _, err := bob.Process(ctx, kp.Bytes); return err }, "BadRequest"},
		{"corrupt ciphertext", func() error { _, err := bob.Process(ctx, corrupt); return err }, ""},
		{"welcome for nobody", func() error { _, err := bob.Join(ctx, msg, nil); return err }, "BadRequest"},
		{"remove a blank leaf", func() error { _, err := alice.Commit(ctx, CommitOptions{Remove: []uint32{7}}); return err }, ""},
		{"bad bench kind", func() error { _, err := p.Bench(ctx, "nap", 1, 0); return err }, "BadRequest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error = %v, want a *tsmls.Error", err)
			}
			if tt.wantName != "" && e.Name != tt.wantName {
				t.Errorf("error = %v, want a %s", err, tt.wantName)
			}
		})
	}
	// The untouched message still decrypts, so nothing above changed state.
	got := must(bob.Process(ctx, msg))(t, "Process(original)")
	if string(got.ApplicationData) != "once" {
		t.Fatalf("original message = %q", got.ApplicationData)
	}
	agree(t, "after errors", alice, bob)
}

// TestBench checks the benchmark entry runs and reports sane figures.
func TestBench(t *testing.T) {
	p := startPeer(t)
	for _, kind := range []BenchKind{BenchPairSession, BenchMessage} {
		r := must(p.Bench(context.Background(), kind, 2, 0))(t, fmt.Sprintf("Bench(%s)", kind))
		if r.Iterations != 2 || r.NsPerOp <= 0 || r.TotalNs < r.NsPerOp {
			t.Errorf("Bench(%s) = %+v", kind, r)
		}
	}
}

// TestNoCredentialBindingInTSMLS records that ts-mls's default
// authentication service accepts any basic credential: a KeyPackage whose
// identity is alice's DID but whose key is mallory's joins, and the members
// see alice's DID at mallory's leaf. The binding of draft-chapman-a2a-mls-03
// Section 4.3 is therefore the application's job on both stacks.
func TestNoCredentialBindingInTSMLS(t *testing.T) {
	ctx := context.Background()
	p := startPeer(t)
	alice, bob := pair(t, p)
	mallory := must(p.NewActor(ctx, "mallory", bytes.Repeat([]byte{9}, 32), alice.DID))(t, "NewActor(mallory)")
	kp := must(mallory.KeyPackage(ctx, nil))(t, "KeyPackage(mallory)")
	c := must(alice.Commit(ctx, CommitOptions{Add: []Hex{kp.Bytes}}))(t, "Commit(add mallory)")
	process(t, c.Commit, "commit", bob)
	s := must(mallory.Join(ctx, c.Welcome, c.RatchetTree))(t, "Join(mallory)")
	var leaf Member
	for _, m := range s.Members {
		if m.LeafIndex == s.OwnLeafIndex {
			leaf = m
		}
	}
	if leaf.Identity != alice.DID || !bytes.Equal(leaf.SignatureKey, mallory.SignatureKey) {
		t.Fatalf("mallory's leaf = %+v, want alice's DID with mallory's key", leaf)
	}
	agree(t, "mismatched member", alice, bob, member{Actor: mallory})
}
