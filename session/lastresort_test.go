package session

import (
	"bytes"
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// lastResort returns the last-resort KeyPackage a wake would publish (nil:
// the relay holds it).
func lastResort(t testing.TB, a *agent) []byte {
	t.Helper()
	var kp []byte
	a.update(func(tx *bolt.Tx) (err error) { kp, _, err = a.s.LastResort(tx); return err })
	return kp
}

// lastResortHeld records the relay's answer that it holds kp (nil: none).
func lastResortHeld(t testing.TB, a *agent, kp []byte) {
	t.Helper()
	var d []byte
	if kp != nil {
		d = wire.KeyPackageDigest(kp)
	}
	a.update(func(tx *bolt.Tx) error { _, err := a.s.LastResortHeld(tx, d); return err })
}

func lastResortCount(t testing.TB, a *agent) (kept, uses int) {
	t.Helper()
	if err := a.db.View(func(tx *bolt.Tx) (err error) { kept, uses, err = a.s.LastResortCount(tx); return err }); err != nil {
		t.Fatal(err)
	}
	return kept, uses
}

// welcome establishes a pair session from a with b's KeyPackage kp and
// returns it; b has not joined.
func welcome(t testing.TB, a, b *agent, kp []byte) *Pair {
	t.Helper()
	var p *Pair
	a.update(func(tx *bolt.Tx) (err error) { p, err = a.s.EstablishPair(tx, b.id(), kp); return err })
	a.update(func(tx *bolt.Tx) error { return a.s.Delivered(tx, p.Group) })
	return p
}

func join(b *agent, p *Pair) error {
	return b.try(func(tx *bolt.Tx) error {
		_, err := b.s.Join(tx, p.Handshake.Welcome, p.Handshake.RatchetTree, JoinOptions{Initiator: p.Handshake.InitiatorDID})
		return err
	})
}

// TestLastResortReuse: the last-resort KeyPackage (RFC 9420, Section
// 16.8) is published until the relay confirms it; Welcomes of two senders
// to it both join, after a reboot, and their messages decrypt; the same
// Welcome again changes nothing; having been used, it is replaced at the
// next refill, and until the relay confirms the successor (and a grace
// after) a Welcome to it still joins.
func TestLastResortReuse(t *testing.T) {
	clk := clocktest.New(testStart)
	alice, carol, dave, bob := newAgent(t, "alice", clk), newAgent(t, "carol", clk), newAgent(t, "dave", clk), newAgent(t, "bob", clk)
	bob.cfg.KeyPackageGrace = 7 * 24 * time.Hour
	bob.reopen()
	lr := publishLastResort(t, bob)

	pa, pc := welcome(t, alice, bob, lr), welcome(t, carol, bob, lr)
	bob.reopen()
	for _, p := range []*Pair{pa, pc} {
		if err := join(bob, p); err != nil {
			t.Fatalf("Join with the last-resort KeyPackage: %v", err)
		}
	}
	if kept, uses := lastResortCount(t, bob); kept != 1 || uses != 2 {
		t.Errorf("after two joins: %d kept, %d uses; want 1, 2", kept, uses)
	}
	bob.reopen()
	if r := send(t, alice, bob, pa.Group, []byte("from alice")); string(r.Plaintext) != "from alice" {
		t.Errorf("alice's group: got %q", r.Plaintext)
	}
	if r := send(t, carol, bob, pc.Group, []byte("from carol")); string(r.Plaintext) != "from carol" {
		t.Errorf("carol's group: got %q", r.Plaintext)
	}
	// The same Welcome again (redelivered, or replayed) changes nothing.
	before := bob.snapshot()
	if err := join(bob, pa); err != nil {
		t.Errorf("the same Welcome again = %v, want it recognised as applied", err)
	}
	if !mapsEqual(before, bob.snapshot()) {
		t.Error("the same Welcome again changed the state")
	}

	replaceUsedLastResort(t, clk, bob, dave, lr)
}

// publishLastResort has a make its last-resort KeyPackage, checks it is
// published until the relay confirms it and kept apart from the pool, and
// returns it.
func publishLastResort(t *testing.T, a *agent) []byte {
	t.Helper()
	lr := lastResort(t, a)
	if lr == nil {
		t.Fatal("LastResort = nil, want a KeyPackage to publish")
	}
	k, err := ParseKeyPackage(lr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CheckKeyPackage(a.s.mlsConfig(), k, a.id()); err != nil {
		t.Fatalf("last-resort KeyPackage: %v", err)
	}
	if again := lastResort(t, a); !bytes.Equal(again, lr) {
		t.Fatal("LastResort before the relay confirmed it returned another KeyPackage, want the same")
	}
	lastResortHeld(t, a, lr)
	if again := lastResort(t, a); again != nil {
		t.Fatal("LastResort after the relay confirmed it returned a KeyPackage, want nil")
	}
	if total, _ := poolSize(t, a); total != 0 {
		t.Errorf("the pool holds %d, want the last-resort KeyPackage kept apart", total)
	}
	return lr
}

// replaceUsedLastResort: bob's used last-resort KeyPackage lr is replaced
// at the next refill; a Welcome to it (from dave, then from another agent)
// still joins until KeyPackageGrace after the relay confirmed the
// successor, and not after.
func replaceUsedLastResort(t *testing.T, clk *clocktest.Clock, bob, dave *agent, lr []byte) {
	t.Helper()
	next := lastResort(t, bob)
	if next == nil || bytes.Equal(next, lr) {
		t.Fatal("LastResort after the last-resort KeyPackage was used: want a new one")
	}
	if again := lastResort(t, bob); !bytes.Equal(again, next) {
		t.Fatal("LastResort again before the relay confirmed: want the same successor")
	}
	if err := join(bob, welcome(t, dave, bob, lr)); err != nil {
		t.Fatalf("Welcome to the replaced KeyPackage before the relay confirmed its successor: %v", err)
	}
	lastResortHeld(t, bob, next)
	clk.Advance(6 * 24 * time.Hour)
	lastResort(t, bob)
	late := newAgent(t, "erin", clk)
	if err := join(bob, welcome(t, late, bob, lr)); err != nil {
		t.Fatalf("Welcome to the replaced KeyPackage within the grace: %v", err)
	}
	clk.Advance(2 * 24 * time.Hour)
	lastResort(t, bob) // prunes
	if kept, _ := lastResortCount(t, bob); kept != 1 {
		t.Errorf("past the grace: %d last-resort KeyPackages kept, want 1", kept)
	}
	frank := newAgent(t, "frank", clk)
	if err := join(bob, welcome(t, frank, bob, lr)); !errors.Is(err, ErrNoKeyPackage) {
		t.Errorf("Welcome to the replaced KeyPackage past the grace = %v, want ErrNoKeyPackage", err)
	}
}

// TestLastResortReplacedByAge: an unused last-resort KeyPackage is
// replaced once half its lifetime passed; a Welcome made for it before
// joins after the relay confirmed the successor; a relay that no longer
// holds the current one gets it published again.
func TestLastResortReplacedByAge(t *testing.T) {
	clk := clocktest.New(testStart)
	alice, bob := newAgent(t, "alice", clk), newAgent(t, "bob", clk)
	old := lastResort(t, bob)
	lastResortHeld(t, bob, old)
	clk.Advance(mls.DefaultKeyPackageLifetime/2 - time.Hour)
	if got := lastResort(t, bob); got != nil {
		t.Fatal("LastResort before half its lifetime: want it kept")
	}
	p := welcome(t, alice, bob, old) // fetched before the replacement
	clk.Advance(time.Hour)
	next := lastResort(t, bob)
	if next == nil || bytes.Equal(next, old) {
		t.Fatal("LastResort past half its lifetime: want a new one")
	}
	bob.reopen()
	lastResortHeld(t, bob, next)
	if kept, _ := lastResortCount(t, bob); kept != 2 {
		t.Errorf("after the replacement: %d kept, want 2", kept)
	}
	if err := join(bob, p); err != nil {
		t.Fatalf("Welcome made for the replaced last-resort KeyPackage: %v", err)
	}
	if r := send(t, alice, bob, p.Group, []byte("hi")); string(r.Plaintext) != "hi" {
		t.Errorf("got %q", r.Plaintext)
	}
	// The relay lost it (a restored backup): publish it again.
	lastResortHeld(t, bob, nil)
	if got := lastResort(t, bob); !bytes.Equal(got, next) {
		t.Error("LastResort after the relay said it holds none: want the current one again")
	}
}

// maxPeerLifetime is the longest KeyPackage lifetime, clock-skew slack
// included, that we expect every peer to accept: 28 days, under the month
// ts-mls declares as its maximum (docs/sessions.md).
const maxPeerLifetime = 28 * 24 * time.Hour

// TestKeyPackageLifetimes: the pool's and the last-resort KeyPackages are
// valid now, for at most maxPeerLifetime in all, and the last-resort one is
// replaced after half of its lifetime.
func TestKeyPackageLifetimes(t *testing.T) {
	clk := clocktest.New(testStart)
	bob := newAgent(t, "bob", clk)
	lr := lastResort(t, bob)
	for i, b := range append(refill(t, bob), lr) {
		m, err := mls.ParseMLSMessage(b)
		if err != nil {
			t.Fatal(err)
		}
		l := m.KeyPackage.LeafNode.Lifetime
		from, to := time.Unix(int64(l.NotBefore), 0), time.Unix(int64(l.NotAfter), 0)
		if from.After(clk.Now()) || !to.After(clk.Now()) || to.Sub(from) > maxPeerLifetime {
			t.Errorf("KeyPackage %d: lifetime %v … %v (%v), want now inside and at most %v", i, from, to, to.Sub(from), maxPeerLifetime)
		}
	}
	lastResortHeld(t, bob, lr)
	clk.Advance(maxPeerLifetime / 2)
	if next := lastResort(t, bob); next == nil {
		t.Error("the last-resort KeyPackage was kept past half of maxPeerLifetime")
	}
}
