//go:build integration

package interop

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/test/interop/tsmls"
)

// Members of the mixed-stack scenarios: a Torpor agent (package session,
// with its own bbolt file) or a ts-mls actor in the peer process, behind
// one interface so that a scenario reads as the list of its steps.

// The exporter every member reports after each step (RFC 9420 Section 8.5).
var exporter = &tsmls.Exporter{Label: "torpor interop", Context: tsmls.Hex("agree"), Length: 32}

// view is what all members of a group must agree on.
type view struct {
	Epoch              uint64
	EpochAuthenticator []byte
	TreeHash           []byte
	Exporter           []byte
	Members            []string // "leaf:DID", in leaf order
}

// processed is a group message as a member saw it.
type processed struct {
	Kind    string // "application", "proposal" or "commit"
	Sender  did.DID
	Data    []byte
	Removed bool // a commit removed this member
}

// committed is a commit a member made and applied.
type committed struct {
	Commit, Welcome, Tree []byte
}

type change struct {
	Add    [][]byte
	Remove []did.DID
	Update bool
}

type proposal struct {
	Add    []byte
	Remove did.DID
	Update bool
}

type member interface {
	Name() string
	DID() did.DID
	view(t testing.TB) view
	keyPackage(t testing.TB) []byte
	create(t testing.TB, group []byte)
	join(t testing.TB, welcome, tree []byte, initiator did.DID)
	commit(t testing.TB, c change) committed
	propose(t testing.TB, p proposal) []byte
	process(t testing.TB, msg []byte) processed
	encrypt(t testing.TB, data []byte) []byte
	// reopen closes and reopens the member's storage, as after a reboot
	// (a no-op for ts-mls members).
	reopen(t testing.TB)
}

// seedOf derives a member's Ed25519 seed from its name.
func seedOf(name string) []byte {
	s := sha256.Sum256([]byte("torpor interop " + name))
	return s[:]
}

// torpor is a Torpor agent: package session over its own bbolt file.
type torpor struct {
	name  string
	key   *did.PrivateKey
	path  string
	db    *bolt.DB
	s     *session.Sessions
	group []byte
	// reopenEach reopens the bbolt file before every operation.
	reopenEach bool
}

func newTorpor(t testing.TB, name string) *torpor {
	t.Helper()
	key, err := did.NewKeyFromSeed(seedOf(name))
	if err != nil {
		t.Fatal(err)
	}
	m := &torpor{name: name, key: key, path: filepath.Join(t.TempDir(), name+".db")}
	m.open(t)
	t.Cleanup(func() { m.db.Close() })
	return m
}

func (m *torpor) open(t testing.TB) {
	t.Helper()
	db, err := store.Open(m.path, &store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.New(session.Config{Key: m.key, PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	m.db, m.s = db, s
}

func (m *torpor) reopen(t testing.TB) {
	t.Helper()
	if err := m.db.Close(); err != nil {
		t.Fatal(err)
	}
	m.open(t)
}

func (m *torpor) Name() string { return m.name }
func (m *torpor) DID() did.DID { return m.key.DID() }

func (m *torpor) update(t testing.TB, what string, f func(tx *bolt.Tx) error) {
	t.Helper()
	if m.reopenEach {
		m.reopen(t)
	}
	if err := m.db.Update(f); err != nil {
		t.Fatalf("%s: %s: %v", m.name, what, err)
	}
}

func (m *torpor) view(t testing.TB) view {
	t.Helper()
	var v view
	err := m.db.View(func(tx *bolt.Tx) error {
		in, err := m.s.Info(tx, m.group)
		if err != nil {
			return err
		}
		v = view{Epoch: in.Epoch, EpochAuthenticator: in.EpochAuthenticator, TreeHash: in.TreeHash}
		for _, mb := range in.Members {
			v.Members = append(v.Members, fmt.Sprintf("%d:%s", mb.Leaf, mb.DID))
		}
		v.Exporter, err = m.s.Export(tx, m.group, exporter.Label, exporter.Context, exporter.Length)
		return err
	})
	if err != nil {
		t.Fatalf("%s: view: %v", m.name, err)
	}
	return v
}

// keyPackage returns one KeyPackage of the pool, as the relay serves it.
func (m *torpor) keyPackage(t testing.TB) []byte {
	t.Helper()
	var kp []byte
	m.update(t, "Refill", func(tx *bolt.Tx) error {
		kps, err := m.s.Refill(tx, 0)
		if err != nil {
			return err
		}
		kp = kps[0]
		_, err = m.s.Published(tx, kps[:1], nil)
		return err
	})
	return kp
}

func (m *torpor) create(t testing.TB, group []byte) {
	t.Helper()
	m.update(t, "Create", func(tx *bolt.Tx) error {
		in, err := m.s.Create(tx, group, session.Policy{})
		if err == nil {
			m.group = in.Group
		}
		return err
	})
}

func (m *torpor) join(t testing.TB, welcome, tree []byte, initiator did.DID) {
	t.Helper()
	m.update(t, "Join", func(tx *bolt.Tx) error {
		in, err := m.s.Join(tx, welcome, tree, session.JoinOptions{Initiator: initiator})
		if err == nil {
			m.group = in.Group
		}
		return err
	})
}

func (m *torpor) commit(t testing.TB, c change) committed {
	t.Helper()
	var out committed
	m.update(t, "Commit", func(tx *bolt.Tx) error {
		r, err := m.s.Commit(tx, m.group, session.Change{Add: c.Add, Remove: c.Remove, Update: c.Update})
		if err == nil {
			out = committed{r.Commit, r.Welcome, r.RatchetTree}
		}
		return err
	})
	return out
}

func (m *torpor) propose(t testing.TB, p proposal) []byte {
	t.Helper()
	var msg []byte
	m.update(t, "Propose", func(tx *bolt.Tx) (err error) {
		msg, err = m.s.Propose(tx, m.group, session.Proposal{Add: p.Add, Remove: p.Remove, Update: p.Update}, false)
		return err
	})
	return msg
}

func (m *torpor) process(t testing.TB, msg []byte) processed {
	t.Helper()
	var r *session.Received
	m.update(t, "Process", func(tx *bolt.Tx) (err error) { r, err = m.s.Process(tx, msg, did.DID{}); return err })
	return processed{Kind: r.Kind.String(), Sender: r.Sender, Data: r.Plaintext, Removed: r.Removed}
}

func (m *torpor) encrypt(t testing.TB, data []byte) []byte {
	t.Helper()
	var msg []byte
	m.update(t, "Encrypt", func(tx *bolt.Tx) (err error) { msg, err = m.s.Encrypt(tx, m.group, data); return err })
	return msg
}

// tsMember is a ts-mls actor with ts-mls defaults: commits as
// PrivateMessage, the ratchet tree out of band, 256-byte padding.
type tsMember struct {
	*tsmls.Actor
	key     *did.PrivateKey
	removed bool
}

func newTS(t testing.TB, p *tsmls.Peer, name string) *tsMember {
	t.Helper()
	key, err := did.NewKeyFromSeed(seedOf(name))
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.NewActor(context.Background(), name, seedOf(name), "")
	if err != nil {
		t.Fatalf("NewActor(%s): %v", name, err)
	}
	if a.DID != key.DID().String() {
		t.Fatalf("ts-mls DID %s, want %s", a.DID, key.DID())
	}
	return &tsMember{Actor: a, key: key}
}

func (m *tsMember) Name() string      { return m.Actor.Name }
func (m *tsMember) DID() did.DID      { return m.key.DID() }
func (m *tsMember) reopen(testing.TB) {}
func ctx() context.Context            { return context.Background() }
func fail(t testing.TB, m member, what string, err error) {
	t.Helper()
	t.Fatalf("%s: %s: %v", m.Name(), what, err)
}

func (m *tsMember) view(t testing.TB) view {
	t.Helper()
	s, err := m.State(ctx(), exporter)
	if err != nil {
		fail(t, m, "State", err)
	}
	if s.Active != "active" {
		t.Fatalf("%s is %s", m.Name(), s.Active)
	}
	v := view{Epoch: s.Epoch, EpochAuthenticator: s.EpochAuthenticator, TreeHash: s.TreeHash, Exporter: s.Exporter}
	for _, mb := range s.Members {
		v.Members = append(v.Members, fmt.Sprintf("%d:%s", mb.LeafIndex, mb.Identity))
	}
	return v
}

func (m *tsMember) keyPackage(t testing.TB) []byte {
	t.Helper()
	kp, err := m.KeyPackage(ctx(), nil)
	if err != nil {
		fail(t, m, "KeyPackage", err)
	}
	return kp.Bytes
}

func (m *tsMember) create(t testing.TB, group []byte) {
	t.Helper()
	if _, err := m.CreateGroup(ctx(), group); err != nil {
		fail(t, m, "CreateGroup", err)
	}
}

func (m *tsMember) join(t testing.TB, welcome, tree []byte, _ did.DID) {
	t.Helper()
	if _, err := m.Join(ctx(), welcome, tree); err != nil {
		fail(t, m, "Join", err)
	}
}

// leafOf returns the leaf of the member id in m's view.
func (m *tsMember) leafOf(t testing.TB, id did.DID) uint32 {
	t.Helper()
	s, err := m.State(ctx(), nil)
	if err != nil {
		fail(t, m, "State", err)
	}
	for _, mb := range s.Members {
		if mb.Identity == id.String() {
			return mb.LeafIndex
		}
	}
	t.Fatalf("%s: %s is not a member", m.Name(), id)
	return 0
}

func (m *tsMember) commit(t testing.TB, c change) committed {
	t.Helper()
	opts := tsmls.CommitOptions{Update: c.Update}
	for _, kp := range c.Add {
		opts.Add = append(opts.Add, kp)
	}
	for _, id := range c.Remove {
		opts.Remove = append(opts.Remove, m.leafOf(t, id))
	}
	r, err := m.Commit(ctx(), opts)
	if err != nil {
		fail(t, m, "Commit", err)
	}
	return committed{r.Commit, r.Welcome, r.RatchetTree}
}

func (m *tsMember) propose(t testing.TB, p proposal) []byte {
	t.Helper()
	var prop tsmls.Proposal
	switch {
	case p.Add != nil:
		prop = tsmls.ProposeAdd(p.Add)
	case !p.Remove.IsZero():
		prop = tsmls.ProposeRemove(m.leafOf(t, p.Remove))
	default:
		prop = tsmls.ProposeUpdate()
	}
	r, err := m.Propose(ctx(), prop, false)
	if err != nil {
		fail(t, m, "Propose", err)
	}
	return r.Message
}

func (m *tsMember) process(t testing.TB, msg []byte) processed {
	t.Helper()
	r, err := m.Process(ctx(), msg)
	if err != nil {
		fail(t, m, "Process", err)
	}
	out := processed{Kind: r.Kind, Data: r.ApplicationData, Removed: r.Summary.Active == "removedFromGroup"}
	if r.Sender != nil {
		out.Sender, err = did.Parse(r.Sender.Identity)
		if err != nil {
			t.Fatalf("%s: sender identity %q: %v", m.Name(), r.Sender.Identity, err)
		}
	}
	m.removed = out.Removed
	return out
}

func (m *tsMember) encrypt(t testing.TB, data []byte) []byte {
	t.Helper()
	msg, err := m.Encrypt(ctx(), data, nil)
	if err != nil {
		fail(t, m, "Encrypt", err)
	}
	return msg
}

// agree checks that every member has the same view of the group.
func agree(t testing.TB, step string, ms ...member) view {
	t.Helper()
	first := ms[0].view(t)
	if len(first.Exporter) != exporter.Length || len(first.EpochAuthenticator) != 32 || len(first.TreeHash) != 32 {
		t.Fatalf("%s: %s's view lacks values: %+v", step, ms[0].Name(), first)
	}
	for _, m := range ms[1:] {
		v := m.view(t)
		if v.Epoch != first.Epoch || !bytes.Equal(v.EpochAuthenticator, first.EpochAuthenticator) ||
			!bytes.Equal(v.TreeHash, first.TreeHash) || !bytes.Equal(v.Exporter, first.Exporter) ||
			!slices.Equal(v.Members, first.Members) {
			t.Fatalf("%s: %s and %s disagree:\n%s: %+v\n%s: %+v", step, ms[0].Name(), m.Name(), ms[0].Name(), first, m.Name(), v)
		}
	}
	t.Logf("%s: %d members agree at epoch %d", step, len(ms), first.Epoch)
	return first
}

// deliver has each of to process msg and checks what they saw.
func deliver(t testing.TB, msg []byte, kind string, from member, to ...member) []processed {
	t.Helper()
	var out []processed
	for _, m := range to {
		p := m.process(t, msg)
		if p.Kind != kind || (from != nil && p.Sender != from.DID()) {
			t.Fatalf("%s got a %s from %v, want a %s from %s", m.Name(), p.Kind, p.Sender, kind, from.Name())
		}
		out = append(out, p)
	}
	return out
}

// others returns ms without x.
func others(x member, ms ...member) []member {
	var out []member
	for _, m := range ms {
		if m != x {
			out = append(out, m)
		}
	}
	return out
}

// messagesAllWays has every member send to every other one.
func messagesAllWays(t testing.TB, ms ...member) {
	t.Helper()
	for _, from := range ms {
		data := []byte("from " + from.Name())
		msg := from.encrypt(t, data)
		for _, p := range deliver(t, msg, "application", from, others(from, ms...)...) {
			if !bytes.Equal(p.Data, data) {
				t.Fatalf("got %q, want %q", p.Data, data)
			}
		}
	}
}
