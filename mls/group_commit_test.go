package mls

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// client is a test participant: its credential, signature key and, once
// in, its group state.
type client struct {
	name string
	sig  ed25519.PrivateKey
	cfg  *Config
	g    *Group
}

func newClient(t testing.TB, name string) *client {
	t.Helper()
	return &client{name: name, sig: newSigner(t), cfg: &Config{}}
}

func (c *client) cred() Credential { return NewBasicCredential([]byte(c.name)) }

// keyPackage returns a fresh KeyPackage and its private keys.
func (c *client) keyPackage(t testing.TB) (*KeyPackage, *KeyPackagePrivate) {
	t.Helper()
	kp, priv, err := NewKeyPackage(c.cfg, c.cred(), c.sig)
	if err != nil {
		t.Fatal(err)
	}
	return kp, priv
}

// roundTrip encodes and decodes m, as a transport would.
func roundTrip(t testing.TB, m *MLSMessage) *MLSMessage {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseMLSMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// commitAndMerge has c commit opts and merges it, returning the pending
// commit (with its Welcome).
func (c *client) commit(t testing.TB, opts *CommitOptions) *PendingCommit {
	t.Helper()
	pc, err := c.g.Commit(opts)
	if err != nil {
		t.Fatalf("%s: Commit: %v", c.name, err)
	}
	if err := c.g.MergeCommit(pc); err != nil {
		t.Fatalf("%s: MergeCommit: %v", c.name, err)
	}
	return pc
}

// join has c join from the Welcome of pc.
func (c *client) join(t testing.TB, pc *PendingCommit, kp *KeyPackage, priv *KeyPackagePrivate, tree *RatchetTree) {
	t.Helper()
	w := roundTrip(t, pc.Welcome)
	g, err := Join(c.cfg, w.Welcome, kp, priv, tree)
	if err != nil {
		t.Fatalf("%s: Join: %v", c.name, err)
	}
	c.g = g
}

// process has each client process m.
func process(t testing.TB, m *MLSMessage, cs ...*client) []*ProcessedMessage {
	t.Helper()
	var out []*ProcessedMessage
	for _, c := range cs {
		p, err := c.g.ProcessMessage(roundTrip(t, m))
		if err != nil {
			t.Fatalf("%s: ProcessMessage: %v", c.name, err)
		}
		out = append(out, p)
	}
	return out
}

// sameState checks that all clients agree on the epoch.
func sameState(t testing.TB, cs ...*client) {
	t.Helper()
	for _, c := range cs[1:] {
		if c.g.Epoch() != cs[0].g.Epoch() {
			t.Fatalf("%s is in epoch %d, %s in %d", c.name, c.g.Epoch(), cs[0].name, cs[0].g.Epoch())
		}
		if !bytes.Equal(c.g.EpochAuthenticator(), cs[0].g.EpochAuthenticator()) {
			t.Fatalf("%s and %s disagree on the epoch authenticator of epoch %d", c.name, cs[0].name, c.g.Epoch())
		}
		if !bytes.Equal(c.g.tree.TreeHash(), cs[0].g.tree.TreeHash()) {
			t.Fatalf("%s and %s disagree on the tree", c.name, cs[0].name)
		}
	}
}

// checkMessaging sends one application message from each client to all
// the others.
func checkMessaging(t testing.TB, cs ...*client) {
	t.Helper()
	for _, from := range cs {
		msg := []byte(fmt.Sprintf("hello from %s in epoch %d", from.name, from.g.Epoch()))
		m, err := from.g.EncryptApplication(msg, nil)
		if err != nil {
			t.Fatalf("%s: EncryptApplication: %v", from.name, err)
		}
		for _, to := range cs {
			if to == from {
				continue
			}
			p, err := to.g.ProcessMessage(roundTrip(t, m))
			if err != nil {
				t.Fatalf("%s → %s: %v", from.name, to.name, err)
			}
			if !bytes.Equal(p.ApplicationData, msg) || p.Sender.Index != from.g.LeafIndex() {
				t.Fatalf("%s → %s: got %q from leaf %d", from.name, to.name, p.ApplicationData, p.Sender.Index)
			}
		}
	}
}

// newTestGroup creates a group of the named clients: the first creates it
// and adds the others in one Commit.
func newTestGroup(t testing.TB, names ...string) []*client {
	t.Helper()
	cs := make([]*client, len(names))
	for i, n := range names {
		cs[i] = newClient(t, n)
	}
	var err error
	cs[0].g, err = NewGroup(cs[0].cfg, []byte("group "+names[0]), cs[0].cred(), cs[0].sig, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) == 1 {
		return cs
	}
	var props []Proposal
	kps := make([]*KeyPackage, len(cs))
	privs := make([]*KeyPackagePrivate, len(cs))
	for i, c := range cs[1:] {
		kps[i+1], privs[i+1] = c.keyPackage(t)
		props = append(props, &AddProposal{KeyPackage: *kps[i+1]})
	}
	pc := cs[0].commit(t, &CommitOptions{Proposals: props, RatchetTreeInWelcome: true})
	for i, c := range cs[1:] {
		c.join(t, pc, kps[i+1], privs[i+1], nil)
	}
	sameState(t, cs...)
	return cs
}

func TestGroupLifecycle(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob", "carol")
	alice, bob, carol := cs[0], cs[1], cs[2]
	checkMessaging(t, cs...)

	// Bob adds Dave with a path (forced) and the tree out of band.
	dave := newClient(t, "dave")
	kp, priv := dave.keyPackage(t)
	pc := bob.commit(t, &CommitOptions{Proposals: []Proposal{&AddProposal{KeyPackage: *kp}}, ForcePath: true})
	process(t, pc.Message, alice, carol)
	dave.join(t, pc, kp, priv, bob.g.RatchetTree())
	cs = append(cs, dave)
	sameState(t, cs...)
	checkMessaging(t, cs...)

	// Carol proposes an Update (public), Dave proposes removing Bob
	// (private); Alice commits both by reference.
	upd, err := carol.g.ProposeUpdate(&SendOptions{Public: true})
	if err != nil {
		t.Fatal(err)
	}
	process(t, upd, alice, bob, dave)
	rm, err := dave.g.Propose(&RemoveProposal{Removed: bob.g.LeafIndex()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	process(t, rm, alice, bob, carol)
	pc = alice.commit(t, nil)
	if got := len(pc.Message.PrivateMessage.Ciphertext); got == 0 {
		t.Fatal("commit is not a PrivateMessage")
	}
	res := process(t, pc.Message, bob, carol, dave)
	if !res[0].Commit.Removed {
		t.Error("Bob was not told he was removed")
	}
	if _, err := bob.g.EncryptApplication([]byte("x"), nil); !errors.Is(err, ErrNotMember) {
		t.Errorf("removed Bob: EncryptApplication = %v, want ErrNotMember", err)
	}
	cs = []*client{alice, carol, dave}
	sameState(t, cs...)
	checkMessaging(t, cs...)
	if len(alice.g.Members()) != 3 {
		t.Errorf("members = %v, want 3", alice.g.Members())
	}

	// An empty Commit (path only) from Dave, then group context extensions.
	pc = dave.commit(t, &CommitOptions{Public: true})
	process(t, pc.Message, alice, carol)
	sameState(t, cs...)
	rc := RequiredCapabilitiesExtension(RequiredCapabilities{CredentialTypes: []CredentialType{CredentialTypeBasic}})
	pc = carol.commit(t, &CommitOptions{Proposals: []Proposal{&GroupContextExtensionsProposal{Extensions: []Extension{rc}}}})
	process(t, pc.Message, alice, dave)
	sameState(t, cs...)
	if len(alice.g.GroupContext().Extensions) != 1 {
		t.Error("GroupContextExtensions not applied")
	}
	checkMessaging(t, cs...)
}

func TestCommitWithPSKs(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob")
	alice, bob := cs[0], cs[1]
	psks := ExternalPSKs(map[string][]byte{"ext": bytes.Repeat([]byte{7}, 32)})
	alice.g.config.PSKs, bob.g.config.PSKs = psks, psks
	nonce := bytes.Repeat([]byte{1}, 32)
	ext := &PreSharedKeyProposal{PSK: PreSharedKeyID{Type: PSKTypeExternal, PSKID: []byte("ext"), Nonce: nonce}}
	res := &PreSharedKeyProposal{PSK: PreSharedKeyID{Type: PSKTypeResumption, Usage: ResumptionPSKUsageApplication,
		PSKGroupID: alice.g.GroupID(), PSKEpoch: alice.g.Epoch(), Nonce: bytes.Repeat([]byte{2}, 32)}}
	pc := alice.commit(t, &CommitOptions{Proposals: []Proposal{ext, res}})
	if pc.Message.PrivateMessage == nil || pc.Welcome != nil {
		t.Fatal("unexpected commit shape")
	}
	process(t, pc.Message, bob)
	sameState(t, cs...)

	// A resumption PSK of an earlier epoch, then a missing PSK.
	old := &PreSharedKeyProposal{PSK: res.PSK}
	old.PSK.Nonce = bytes.Repeat([]byte{3}, 32)
	pc = bob.commit(t, &CommitOptions{Proposals: []Proposal{old}})
	process(t, pc.Message, alice)
	sameState(t, cs...)
	missing := &PreSharedKeyProposal{PSK: PreSharedKeyID{Type: PSKTypeExternal, PSKID: []byte("nope"), Nonce: nonce}}
	if _, err := alice.g.Commit(&CommitOptions{Proposals: []Proposal{missing}}); !errors.Is(err, ErrMissingPSK) {
		t.Errorf("Commit with an unknown PSK = %v, want ErrMissingPSK", err)
	}
}

// TestInvalidCommitsRejected checks that receivers reject commits with an
// invalid proposal list or a bad confirmation tag, and stay usable.
func TestInvalidCommitsRejected(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob", "carol")
	alice, bob, carol := cs[0], cs[1], cs[2]
	kp, _ := newClient(t, "dave").keyPackage(t)

	tests := []struct {
		name  string
		forge func(t *testing.T) *MLSMessage
		want  error
	}{
		{"two removes of one leaf", func(t *testing.T) *MLSMessage {
			return forgeCommit(t, alice, []Proposal{&RemoveProposal{Removed: 2}, &RemoveProposal{Removed: 2}}, true)
		}, ErrInvalidProposal},
		{"committer removes itself", func(t *testing.T) *MLSMessage {
			return forgeCommit(t, alice, []Proposal{&RemoveProposal{Removed: 0}}, true)
		}, ErrInvalidProposal},
		{"remove of a blank leaf", func(t *testing.T) *MLSMessage {
			return forgeCommit(t, alice, []Proposal{&RemoveProposal{Removed: 3}}, true)
		}, ErrInvalidProposal},
		{"add of a member already in the group", func(t *testing.T) *MLSMessage {
			twin := &client{name: "bob", sig: bob.sig, cfg: &Config{}}
			dup, _ := twin.keyPackage(t)
			return forgeCommit(t, alice, []Proposal{&AddProposal{KeyPackage: *dup}}, false)
		}, ErrInvalidProposal},
		{"bad confirmation tag", func(t *testing.T) *MLSMessage {
			return forgeCommit(t, alice, nil, true)
		}, ErrInvalidCommit},
		{"reinit with another proposal", func(t *testing.T) *MLSMessage {
			return forgeCommit(t, alice, []Proposal{&ReInitProposal{GroupID: []byte("x"), Version: 1, CipherSuite: 1},
				&AddProposal{KeyPackage: *kp}}, false)
		}, ErrInvalidProposal},
		{"remove without a path", func(t *testing.T) *MLSMessage {
			return forgeCommit(t, alice, []Proposal{&RemoveProposal{Removed: 2}}, false)
		}, ErrInvalidCommit},
		{"unknown reference", func(t *testing.T) *MLSMessage {
			return forgeCommitRaw(t, alice, &Commit{Proposals: []ProposalOrRef{{Reference: bytes.Repeat([]byte{9}, 32)}}})
		}, ErrUnknownProposal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.forge(t)
			before := bob.g.EpochAuthenticator()
			if _, err := bob.g.ProcessMessage(roundTrip(t, m)); !errors.Is(err, tt.want) {
				t.Errorf("ProcessMessage = %v, want %v", err, tt.want)
			}
			if !bytes.Equal(before, bob.g.EpochAuthenticator()) || bob.g.Err() != nil {
				t.Error("a rejected commit changed the group")
			}
		})
	}
	// The group still works afterwards.
	pc := alice.commit(t, &CommitOptions{ForcePath: true})
	process(t, pc.Message, bob, carol)
	sameState(t, cs...)
}

// forgeCommit builds a Commit from c carrying props by value, bypassing
// the sender-side validation, with a path if withPath, signed and
// confirmed correctly: only the list is wrong.
func forgeCommit(t *testing.T, c *client, props []Proposal, withPath bool) *MLSMessage {
	t.Helper()
	commit := &Commit{}
	for _, p := range props {
		commit.Proposals = append(commit.Proposals, ProposalOrRef{Proposal: p})
	}
	if withPath {
		tr := c.g.tree.clone()
		pu, err := tr.createPath(c.g.self, tr.leaf(c.g.self), c.sig, c.g.ctx.GroupID, nil2rand())
		if err != nil {
			t.Fatal(err)
		}
		ctx := c.g.ctx.clone()
		ctx.Epoch++
		ctx.TreeHash = tr.TreeHash()
		up, err := pu.encrypt(tr, ctx.Marshal(), nil)
		if err != nil {
			t.Fatal(err)
		}
		commit.Path = up
	}
	return forgeCommitRaw(t, c, commit)
}

func nil2rand() io.Reader { return (&Config{}).rand() }

// forgeCommitRaw signs and protects commit as c, with a confirmation tag
// that is only right if the rest is.
func forgeCommitRaw(t *testing.T, c *client, commit *Commit) *MLSMessage {
	t.Helper()
	g := c.g
	content := &FramedContent{GroupID: g.ctx.GroupID, Epoch: g.ctx.Epoch,
		Sender: Sender{Type: SenderTypeMember, Index: uint32(g.self)}, ContentType: ContentTypeCommit, Commit: commit}
	pm, err := g.protector.ProtectPublic(content, g.sigPriv, bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return &MLSMessage{Version: ProtocolMLS10, WireFormat: WireFormatPublicMessage, PublicMessage: pm}
}

func TestPanicBecomesStickyError(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob")
	g := cs[0].g
	func() (err error) {
		defer g.recoverSticky(&err)
		panic("boom")
	}()
	if g.Err() == nil {
		t.Fatal("no sticky error after a panic")
	}
	if _, err := g.Commit(nil); !errors.Is(err, g.Err()) {
		t.Errorf("Commit after a panic = %v, want the sticky error", err)
	}
	if _, err := g.ProcessMessage(&MLSMessage{}); err != g.Err() {
		t.Errorf("ProcessMessage after a panic = %v, want the sticky error", err)
	}
}

// panicDeep dereferences a nil pointer, so that the stack of the panic
// names it.
//
//go:noinline
func panicDeep(p *GroupContext) uint64 { return p.Epoch }

// TestPanicKeepsStack: the sticky error of a recovered panic is an
// *InternalError whose Error is one line and whose Stack names the
// panicking function; errors.As finds it and the runtime error it wraps.
func TestPanicKeepsStack(t *testing.T) {
	g := newTestGroup(t, "alice")[0].g
	err := func() (err error) {
		defer g.recoverSticky(&err)
		panicDeep(nil)
		return nil
	}()
	checkInternalError(t, err, "group operation")
	if err != g.Err() {
		t.Errorf("returned %v, sticky %v", err, g.Err())
	}
	err = func() (err error) {
		defer recoverInput(&err)
		panicDeep(nil)
		return nil
	}()
	checkInternalError(t, err, "processing input outside a group")
}

func checkInternalError(t *testing.T, err error, op string) {
	t.Helper()
	var ie *InternalError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %T %v, want an *InternalError", err, err)
	}
	if ie.Op != op || strings.Contains(ie.Error(), "\n") || !strings.HasPrefix(ie.Error(), "mls: internal error during "+op+": ") {
		t.Errorf("Error() = %q, want one line for %q", ie.Error(), op)
	}
	if !bytes.Contains(ie.Stack, []byte("mls.panicDeep")) {
		t.Errorf("Stack does not name the panicking function:\n%s", ie.Stack)
	}
	var re runtime.Error
	if !errors.As(err, &re) {
		t.Errorf("errors.As(err, runtime.Error) = false for %v", err)
	}
}

// TestSingleMemberCommits: a lone creator commits with an empty filtered
// direct path, then adds a member without a path.
func TestSingleMemberCommits(t *testing.T) {
	cs := newTestGroup(t, "alice")
	alice := cs[0]
	for range 2 {
		pc := alice.commit(t, nil)
		if pc.Message.PrivateMessage == nil || pc.Welcome != nil {
			t.Fatal("unexpected commit shape")
		}
	}
	if alice.g.Epoch() != 2 {
		t.Fatalf("epoch %d, want 2", alice.g.Epoch())
	}
	bob := newClient(t, "bob")
	kp, priv := bob.keyPackage(t)
	pc := alice.commit(t, &CommitOptions{Proposals: []Proposal{&AddProposal{KeyPackage: *kp}}})
	if pc.Message.PrivateMessage == nil {
		t.Fatal("no message")
	}
	bob.join(t, pc, kp, priv, alice.g.RatchetTree())
	sameState(t, alice, bob)
	checkMessaging(t, alice, bob)
	// Bob now commits with a path that reaches Alice.
	pc = bob.commit(t, nil)
	process(t, pc.Message, alice)
	sameState(t, alice, bob)
	checkMessaging(t, alice, bob)
}

func TestExportAgrees(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob")
	a, err := cs[0].g.Export("torpor test", []byte("ctx"), 32)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cs[1].g.Export("torpor test", []byte("ctx"), 32)
	if err != nil || !bytes.Equal(a, b) || len(a) != 32 {
		t.Fatalf("Export = %x, %x (%v)", a, b, err)
	}
	if c, _ := cs[1].g.Export("other", []byte("ctx"), 32); bytes.Equal(a, c) {
		t.Error("different labels export the same secret")
	}
}

// TestMergeCommitWithoutPendingCommit: MergeCommit(nil), of a zero
// PendingCommit or of one merged already returns an error and leaves the
// group as it was (it panicked on nil).
func TestMergeCommitWithoutPendingCommit(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob")
	g := cs[0].g
	merged := cs[0].commit(t, nil)
	for name, pc := range map[string]*PendingCommit{"nil": nil, "zero": {}, "merged": merged} {
		epoch := g.Epoch()
		if err := g.MergeCommit(pc); !errors.Is(err, errNoPendingCommit) {
			t.Errorf("MergeCommit(%s) = %v, want errNoPendingCommit", name, err)
		}
		if g.Epoch() != epoch || g.Err() != nil {
			t.Errorf("MergeCommit(%s) moved the group to epoch %d or left it broken: %v", name, g.Epoch(), g.Err())
		}
	}
}
