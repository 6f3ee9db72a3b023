package session

import (
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

func poolSize(t testing.TB, a *agent) (total, published int) {
	t.Helper()
	total, published, _ = poolTaken(t, a)
	return total, published
}

func poolTaken(t testing.TB, a *agent) (total, published, taken int) {
	t.Helper()
	if err := a.db.View(func(tx *bolt.Tx) (err error) { total, published, taken, err = a.s.PoolSize(tx); return err }); err != nil {
		t.Fatal(err)
	}
	return total, published, taken
}

// published marks kps published; held are the KeyPackages the relay
// answers that it holds (nil: it did not say). It returns how many were
// found handed out.
func published(t testing.TB, a *agent, kps, held [][]byte) int {
	t.Helper()
	var n int
	a.update(func(tx *bolt.Tx) (err error) { n, err = a.s.Published(tx, kps, held); return err })
	return n
}

func digests(kps ...[]byte) [][]byte {
	out := [][]byte{}
	for _, kp := range kps {
		out = append(out, wire.KeyPackageDigest(kp))
	}
	return out
}

func refill(t testing.TB, a *agent) [][]byte {
	t.Helper()
	var kps [][]byte
	a.update(func(tx *bolt.Tx) (err error) { kps, err = a.s.Refill(tx, 0); return err })
	return kps
}

func TestPoolRefill(t *testing.T) {
	bob := newAgent(t, "bob", nil) // PoolSize 4
	kps := refill(t, bob)
	if len(kps) != 4 {
		t.Fatalf("first Refill returned %d KeyPackages, want 4", len(kps))
	}
	for _, kp := range kps {
		k, err := ParseKeyPackage(kp)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := CheckKeyPackage(bob.s.mlsConfig(), k, bob.id()); err != nil {
			t.Fatalf("pool KeyPackage: %v", err)
		}
	}
	if again := refill(t, bob); len(again) != 4 {
		t.Errorf("Refill before Published returned %d, want the same 4", len(again))
	}
	published(t, bob, kps, nil)
	if again := refill(t, bob); len(again) != 0 {
		t.Errorf("Refill after Published returned %d, want 0", len(again))
	}
	if total, pub := poolSize(t, bob); total != 4 || pub != 4 {
		t.Errorf("pool = %d (%d published), want 4 (4)", total, pub)
	}
	var n int
	bob.update(func(tx *bolt.Tx) error {
		kps, err := bob.s.Refill(tx, 6) // the agent asks for more
		n = len(kps)
		return err
	})
	if n != 2 {
		t.Errorf("Refill(6) returned %d new, want 2", n)
	}
}

// TestWelcomeAfterRestart: the device publishes its pool and sleeps; days
// later, after reboots, the Welcome for one of its KeyPackages joins, the
// KeyPackage is gone from the pool, and the next wake refills one.
func TestWelcomeAfterRestart(t *testing.T) {
	clk := clocktest.New(testStart)
	alice, bob := newAgent(t, "alice", clk), newAgent(t, "bob", clk)
	kps := refill(t, bob)
	published(t, bob, kps, nil)
	bob.reopen()

	var p *Pair
	alice.update(func(tx *bolt.Tx) (err error) { p, err = alice.s.EstablishPair(tx, bob.id(), kps[2]); return err })
	alice.update(func(tx *bolt.Tx) error { return alice.s.Delivered(tx, p.Group) })
	for range 3 {
		clk.Advance(40 * time.Hour)
		bob.reopen()
	}
	join := func() error {
		return bob.try(func(tx *bolt.Tx) error {
			_, err := bob.s.Join(tx, p.Handshake.Welcome, p.Handshake.RatchetTree, JoinOptions{Initiator: alice.id()})
			return err
		})
	}
	if err := join(); err != nil {
		t.Fatalf("Join five days later: %v", err)
	}
	if total, _ := poolSize(t, bob); total != 3 {
		t.Errorf("pool holds %d after the join, want 3", total)
	}
	// The same Welcome again (delivered twice after a crash) is applied
	// already: nothing changes.
	before := bob.snapshot()
	if err := join(); err != nil {
		t.Errorf("second Join with the same Welcome = %v, want it recognised as applied", err)
	}
	if !mapsEqual(before, bob.snapshot()) {
		t.Error("the second Join changed the state")
	}
	if got := refill(t, bob); len(got) != 1 {
		t.Errorf("Refill after the join returned %d, want 1", len(got))
	}
	bob.reopen()
	if r := send(t, alice, bob, p.Group, []byte("hello")); string(r.Plaintext) != "hello" {
		t.Errorf("got %q", r.Plaintext)
	}
	// Once the group is gone, the Welcome is for no KeyPackage of the pool.
	bob.update(func(tx *bolt.Tx) error { return bob.s.Drop(tx, p.Group) })
	if err := join(); !errors.Is(err, ErrNoKeyPackage) {
		t.Errorf("Join after the group was dropped = %v, want ErrNoKeyPackage", err)
	}
}

// TestPoolHandedOut: KeyPackages the relay no longer holds (handed out to
// initiators who may never send a Welcome, or fetched only to empty the
// pool) stop counting toward the pool, so the next refill replaces them;
// a Welcome to one of them still joins while the relay could still hold
// it in its queue, and its private halves go after that grace.
func TestPoolHandedOut(t *testing.T) {
	clk := clocktest.New(testStart)
	alice, bob := newAgent(t, "alice", clk), newAgent(t, "bob", clk)
	bob.cfg.KeyPackageGrace = 7 * 24 * time.Hour
	bob.reopen()
	kps := refill(t, bob) // 4
	if n := published(t, bob, kps, digests(kps...)); n != 0 {
		t.Fatalf("relay holds all 4: %d found handed out, want 0", n)
	}
	// Three were fetched; kps[0] stays at the relay.
	if n := published(t, bob, nil, digests(kps[0])); n != 3 {
		t.Fatalf("relay holds 1 of 4: %d found handed out, want 3", n)
	}
	if n := published(t, bob, nil, digests(kps[0])); n != 0 {
		t.Errorf("the same answer again: %d newly handed out, want 0", n)
	}
	if total, pub, taken := poolTaken(t, bob); total != 4 || pub != 4 || taken != 3 {
		t.Errorf("pool = %d (%d published, %d taken), want 4 (4, 3)", total, pub, taken)
	}
	fresh := refill(t, bob)
	if len(fresh) != 3 {
		t.Fatalf("Refill after 3 were handed out returned %d new, want 3", len(fresh))
	}
	published(t, bob, fresh, digests(append(fresh, kps[0])...))
	if total, _, taken := poolTaken(t, bob); total != 7 || taken != 3 {
		t.Errorf("pool = %d (%d taken), want 7 (3)", total, taken)
	}

	// A relay that lost its pool holds none: every published one is taken.
	// A nil answer (the relay did not say) changes nothing.
	if n := published(t, bob, nil, nil); n != 0 {
		t.Errorf("nil held: %d found handed out, want 0", n)
	}

	handedOutGrace(t, clk, alice, bob, kps)
}

// handedOutGrace: of bob's KeyPackages kps, of which kps[1:] were handed
// out, a Welcome to kps[1] joins six days later; two days after, past the
// grace, the others handed out are pruned and a Welcome to kps[2] finds
// no KeyPackage.
func handedOutGrace(t *testing.T, clk *clocktest.Clock, alice, bob *agent, kps [][]byte) {
	t.Helper()
	clk.Advance(6 * 24 * time.Hour)
	var p *Pair
	alice.update(func(tx *bolt.Tx) (err error) { p, err = alice.s.EstablishPair(tx, bob.id(), kps[1]); return err })
	bob.update(func(tx *bolt.Tx) error {
		_, err := bob.s.Join(tx, p.Handshake.Welcome, p.Handshake.RatchetTree, JoinOptions{Initiator: alice.id()})
		return err
	})
	if total, _, taken := poolTaken(t, bob); total != 6 || taken != 2 {
		t.Errorf("after the join: pool = %d (%d taken), want 6 (2)", total, taken)
	}
	// Past the grace the other two handed-out ones are pruned; the four
	// the relay holds stay, and nothing new is needed.
	clk.Advance(2 * 24 * time.Hour)
	if got := refill(t, bob); len(got) != 0 {
		t.Errorf("Refill past the grace returned %d new, want 0", len(got))
	}
	if total, _, taken := poolTaken(t, bob); total != 4 || taken != 0 {
		t.Errorf("past the grace: pool = %d (%d taken), want 4 (0)", total, taken)
	}
	// A Welcome to a pruned one finds no KeyPackage.
	var late *Pair
	alice.update(func(tx *bolt.Tx) (err error) { late, err = alice.s.EstablishPair(tx, bob.id(), kps[2]); return err })
	err := bob.try(func(tx *bolt.Tx) error {
		_, err := bob.s.Join(tx, late.Handshake.Welcome, late.Handshake.RatchetTree, JoinOptions{Initiator: alice.id()})
		return err
	})
	if !errors.Is(err, ErrNoKeyPackage) {
		t.Errorf("Welcome to a KeyPackage pruned past the grace: %v, want ErrNoKeyPackage", err)
	}
}

// TestPoolTakenBound: a caller who empties the relay's pool again and
// again costs the device at most MaxTakenFactor times the pool's target
// in kept private halves; the most recently taken stay.
func TestPoolTakenBound(t *testing.T) {
	clk := clocktest.New(testStart)
	alice, bob := newAgent(t, "alice", clk), newAgent(t, "bob", clk)
	const target = 2
	var taken [][]byte // in the order the relay handed them out
	for range MaxTakenFactor + 2 {
		var kps [][]byte
		bob.update(func(tx *bolt.Tx) (err error) { kps, err = bob.s.Refill(tx, target); return err })
		if len(kps) != target {
			t.Fatalf("Refill = %d new, want %d", len(kps), target)
		}
		published(t, bob, kps, digests(kps...))
		clk.Advance(time.Minute)
		if n := published(t, bob, nil, digests()); n != target { // the relay's pool was emptied
			t.Fatalf("%d found handed out, want %d", n, target)
		}
		taken = append(taken, kps...)
	}
	bob.update(func(tx *bolt.Tx) error { _, err := bob.s.Refill(tx, target); return err })
	if _, _, n := poolTaken(t, bob); n != MaxTakenFactor*target {
		t.Errorf("kept %d handed-out KeyPackages, want the bound %d", n, MaxTakenFactor*target)
	}
	join := func(kp []byte) error {
		var p *Pair
		alice.update(func(tx *bolt.Tx) (err error) { p, err = alice.s.EstablishPair(tx, bob.id(), kp); return err })
		return bob.try(func(tx *bolt.Tx) error {
			_, err := bob.s.Join(tx, p.Handshake.Welcome, p.Handshake.RatchetTree, JoinOptions{Initiator: alice.id()})
			return err
		})
	}
	if err := join(taken[0]); !errors.Is(err, ErrNoKeyPackage) {
		t.Errorf("Welcome to the oldest handed-out KeyPackage: %v, want ErrNoKeyPackage (dropped for the bound)", err)
	}
	if err := join(taken[len(taken)-1]); err != nil {
		t.Errorf("Welcome to the newest handed-out KeyPackage: %v", err)
	}
}

func TestPoolExpiry(t *testing.T) {
	clk := clocktest.New(testStart)
	bob := newAgent(t, "bob", clk)
	bob.cfg.KeyPackageLifetime, bob.cfg.KeyPackageGrace = 48*time.Hour, 24*time.Hour
	bob.reopen()
	old := refill(t, bob)
	published(t, bob, old, nil)

	clk.Advance(50 * time.Hour) // expired, within the grace
	fresh := refill(t, bob)
	if len(fresh) != 4 {
		t.Fatalf("Refill after expiry returned %d, want 4 new", len(fresh))
	}
	if total, _ := poolSize(t, bob); total != 8 {
		t.Errorf("pool = %d, want 8 (4 expired kept for the grace)", total)
	}
	// A Welcome for an expired KeyPackage still in its grace joins.
	alice := newAgent(t, "alice", clocktest.New(testStart))
	var p *Pair
	alice.update(func(tx *bolt.Tx) (err error) { p, err = alice.s.EstablishPair(tx, bob.id(), old[0]); return err })
	bob.update(func(tx *bolt.Tx) error {
		_, err := bob.s.Join(tx, p.Handshake.Welcome, p.Handshake.RatchetTree, JoinOptions{})
		return err
	})
	clk.Advance(30 * time.Hour) // past the grace
	refill(t, bob)
	if total, _ := poolSize(t, bob); total != 4 {
		t.Errorf("pool = %d after the grace, want 4", total)
	}
}

// TestJoinTreeMismatch: the joiner aborts when the ratchet tree does not
// match the Welcome (draft Section 7.6), keeping its KeyPackage.
func TestJoinTreeMismatch(t *testing.T) {
	alice, bob, carol := newAgent(t, "alice", nil), newAgent(t, "bob", nil), newAgent(t, "carol", nil)
	other := pair(t, carol, newAgent(t, "dave", nil))
	kp := bob.keyPackage()
	var p *Pair
	alice.update(func(tx *bolt.Tx) (err error) { p, err = alice.s.EstablishPair(tx, bob.id(), kp); return err })
	otherTree := carol.mlsGroup(other).RatchetTree().Marshal()
	truncated := p.Handshake.RatchetTree[:len(p.Handshake.RatchetTree)-1]
	tests := []struct {
		name string
		tree []byte
	}{
		{"another group's tree", otherTree},
		{"truncated tree", truncated},
		{"no tree, none in the Welcome", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := bob.snapshot()
			err := bob.try(func(tx *bolt.Tx) error {
				_, err := bob.s.Join(tx, p.Handshake.Welcome, tt.tree, JoinOptions{Initiator: alice.id()})
				return err
			})
			if err == nil {
				t.Fatal("Join succeeded")
			}
			if total, _ := poolSize(t, bob); total != 4 {
				t.Errorf("pool = %d, want 4 (the KeyPackage kept)", total)
			}
			if !mapsEqual(before, bob.snapshot()) {
				t.Error("state changed")
			}
		})
	}
	err := bob.try(func(tx *bolt.Tx) error {
		_, err := bob.s.Join(tx, p.Handshake.Welcome, p.Handshake.RatchetTree, JoinOptions{Initiator: carol.id()})
		return err
	})
	if !errors.Is(err, ErrNotMember) {
		t.Errorf("Join naming an initiator outside the group = %v, want ErrNotMember", err)
	}
	bob.update(func(tx *bolt.Tx) error {
		_, err := bob.s.Join(tx, p.Handshake.Welcome, p.Handshake.RatchetTree, JoinOptions{Initiator: alice.id(), Policy: Policy{Committer: alice.id()}})
		return err
	})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
