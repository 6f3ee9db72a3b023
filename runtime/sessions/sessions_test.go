package sessions_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/runtime/sessions"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// newDevice is the receiving agent of key, on a file of its own.
func newDevice(t testing.TB, key *did.PrivateKey, clk *clocktest.Clock) *runtimetest.Device {
	return runtimetest.NewDevice(t, key, clk, filepath.Join(t.TempDir(), "agent.db"), &store.Options{NoSync: true})
}

// sender is the other agent, with its own sessions file.
type sender struct {
	key *did.PrivateKey
	db  *bolt.DB
	s   *session.Sessions
}

func newSender(t testing.TB, key *did.PrivateKey, clk *clocktest.Clock) *sender {
	db, err := store.Open(filepath.Join(t.TempDir(), "sender.db"), &store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := session.New(session.Config{Key: key, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return &sender{key: key, db: db, s: s}
}

func (s *sender) update(t testing.TB, f func(tx *bolt.Tx) error) {
	t.Helper()
	if err := s.db.Update(f); err != nil {
		t.Fatal(err)
	}
}

// establish makes a pair session from s to the device from one of the
// KeyPackages the device published, and returns the group and the
// handshake part.
func (s *sender) establish(t testing.TB, kp []byte, to did.DID) ([]byte, a2a.Part) {
	var p *session.Pair
	s.update(t, func(tx *bolt.Tx) (err error) { p, err = s.s.EstablishPair(tx, to, kp); return err })
	s.update(t, func(tx *bolt.Tx) error { return s.s.Delivered(tx, p.Group) })
	part, err := p.Handshake.Part()
	if err != nil {
		t.Fatal(err)
	}
	return p.Group, part
}

// seal encrypts obj in the group as an MLS wire part.
func (s *sender) seal(t testing.TB, group, obj []byte) a2a.Part {
	var w a2a.MLSWire
	s.update(t, func(tx *bolt.Tx) (err error) { w, err = s.s.SealObject(tx, group, obj); return err })
	p, err := w.Part()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func record(t testing.TB, seq uint64, from did.DID, parts ...a2a.Part) drain.Record {
	return drain.Record{Seq: seq, From: from.String(), Body: runtimetest.Body(t, parts...)}
}

func objectID(t testing.TB, raw []byte) string {
	o, err := governed.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return o.ID
}

// TestDrainWithSessions runs MLS records through the agent's real drain:
// a Welcome joins, encrypted objects decrypt and go through the six
// checks with the MLS sender's DID (check 3), and the state survives a
// reboot.
func TestDrainWithSessions(t *testing.T) {
	clk := clocktest.New(t0)
	bobKey, aliceKey, carolKey := runtimetest.Key(t, 2), runtimetest.Key(t, 1), runtimetest.Key(t, 3)
	bob := newDevice(t, bobKey, clk)
	var kps [][]byte
	if err := bob.DB.Update(func(tx *bolt.Tx) (err error) { kps, err = bob.S.Refill(tx, 0); return err }); err != nil {
		t.Fatal(err)
	}
	alice, carol := newSender(t, aliceKey, clk), newSender(t, carolKey, clk)
	group, hs := alice.establish(t, kps[0], bobKey.DID())
	// carol also establishes a session, but her handshake is lost: her
	// messages wait in the queue.
	cgroup, _ := carol.establish(t, kps[1], bobKey.DID())

	good := runtimetest.Object(t, aliceKey, "comms:message", t0, time.Hour, nil)
	byCarol := runtimetest.Object(t, carolKey, "comms:message", t0, time.Hour, nil) // signed by carol, sent by alice
	notPermitted := runtimetest.Object(t, aliceKey, "action:pay", t0, time.Hour, nil)
	recs := []drain.Record{
		record(t, 1, aliceKey.DID(), hs),
		record(t, 2, aliceKey.DID(), alice.seal(t, group, good)),
		record(t, 3, aliceKey.DID(), alice.seal(t, group, byCarol)),
		record(t, 4, aliceKey.DID(), alice.seal(t, group, good)), // a replay, in a fresh MLS message
		record(t, 5, aliceKey.DID(), alice.seal(t, group, notPermitted)),
		record(t, 6, carolKey.DID(), carol.seal(t, cgroup, runtimetest.Object(t, carolKey, "comms:message", t0, time.Hour, nil))),
		record(t, 7, carolKey.DID(), hs), // alice's handshake replayed by carol
	}
	var acked []uint64
	rep, err := bob.Pipe.Batch(context.Background(), recs, func(_ context.Context, seqs []uint64) error {
		acked = append(acked, seqs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkFirstBatch(t, rep, acked)
	if got := bob.Rec.Got(); len(got) != 1 || got[0].ObjectID != objectID(t, good) || got[0].Sender != aliceKey.DID().String() {
		t.Fatalf("delivered %+v, want alice's object from alice", got)
	}

	// The relay delivers the Welcome again (a crash between the commit and
	// the acknowledgement): it is recognised as applied.
	rep, err = bob.Pipe.Batch(context.Background(), []drain.Record{record(t, 1, aliceKey.DID(), hs)}, nil)
	if err != nil || rep.Handshake != 1 || rep.RejectedTotal() != 0 {
		t.Fatalf("the Welcome again: %v, %v", rep, err)
	}

	// After a reboot the session goes on.
	bob.Reboot()
	next := runtimetest.Object(t, aliceKey, "comms:message", t0, time.Hour, map[string]any{"n": 2})
	rep, err = bob.Pipe.Batch(context.Background(), []drain.Record{record(t, 8, aliceKey.DID(), alice.seal(t, group, next))}, nil)
	if err != nil || rep.Accepted != 1 {
		t.Fatalf("after reboot: %v, %v", rep, err)
	}
	got := bob.Rec.Got()
	if last := got[len(got)-1]; last.ObjectID != objectID(t, next) {
		t.Errorf("delivered %s, want %s", last.ObjectID, objectID(t, next))
	}
}

// checkFirstBatch checks the report and acknowledgements of
// TestDrainWithSessions' first batch: one handshake applied, one object
// accepted, carol's record deferred, one rejection for each cause, every
// record but the deferred one acknowledged.
func checkFirstBatch(t *testing.T, rep drain.Report, acked []uint64) {
	t.Helper()
	t.Logf("report: %v", rep)
	if rep.Handshake != 1 || rep.Accepted != 1 || rep.Deferred != 1 {
		t.Errorf("handshakes %d accepted %d deferred %d, want 1, 1, 1", rep.Handshake, rep.Accepted, rep.Deferred)
	}
	for cause, n := range map[string]int{"sender-mismatch": 1, "replay": 1, "purpose-not-permitted": 1, drain.CauseMLS: 1} {
		if rep.Rejected[cause] != n {
			t.Errorf("rejected for %s: %d, want %d (%v)", cause, rep.Rejected[cause], n, rep.Rejected)
		}
	}
	if !slices.Equal(acked, []uint64{1, 2, 3, 4, 5, 7}) {
		t.Errorf("acked %v, want all but the deferred record 6", acked)
	}
}

func TestKeyPackages(t *testing.T) {
	clk := clocktest.New(t0)
	d := newDevice(t, runtimetest.Key(t, 2), clk)
	kp := sessions.KeyPackages{S: d.S, DB: d.DB}
	kps, err := kp.Refill(context.Background(), 5)
	if err != nil || len(kps) != 5 {
		t.Fatalf("Refill(5) = %d, %v", len(kps), err)
	}
	if _, err := kp.Published(context.Background(), kps, nil); err != nil {
		t.Fatal(err)
	}
	if kps, err = kp.Refill(context.Background(), 5); err != nil || len(kps) != 0 {
		t.Fatalf("Refill after Published = %d, %v; want none", len(kps), err)
	}
}

// TestPublishedNothingCommitsNothing: Published with no KeyPackages and
// none found handed out (every state frame of an empty wake) commits no
// transaction, which would cost two fsyncs.
func TestPublishedNothingCommitsNothing(t *testing.T) {
	clk := clocktest.New(t0)
	d := newDevice(t, runtimetest.Key(t, 2), clk)
	kp := sessions.KeyPackages{S: d.S, DB: d.DB}
	kps, err := kp.Refill(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kp.Published(context.Background(), kps, nil); err != nil {
		t.Fatal(err)
	}
	digests := make([][]byte, len(kps))
	for i, b := range kps {
		digests[i] = wire.KeyPackageDigest(b)
	}
	id := func() (n int) {
		d.DB.View(func(tx *bolt.Tx) error { n = tx.ID(); return nil })
		return n
	}
	before := id()
	if n, err := kp.Published(context.Background(), nil, digests); err != nil || n != 0 {
		t.Fatalf("Published(none, all held) = %d, %v", n, err)
	}
	if after := id(); after != before {
		t.Errorf("Published with nothing to record committed %d transactions", after-before)
	}
	// One handed out: that is recorded.
	if n, err := kp.Published(context.Background(), nil, digests[1:]); err != nil || n != 1 {
		t.Fatalf("Published(none, one taken) = %d, %v", n, err)
	}
	if after := id(); after != before+1 {
		t.Errorf("Published that found one handed out committed %d transactions, want 1", after-before)
	}
}

// TestRefillFullPoolCommitsNothing: a refill that finds the pool full
// (every wake but the few after KeyPackages were handed out) commits no
// transaction; one that makes KeyPackages commits them.
func TestRefillFullPoolCommitsNothing(t *testing.T) {
	clk := clocktest.New(t0)
	d := newDevice(t, runtimetest.Key(t, 2), clk)
	kp := sessions.KeyPackages{S: d.S, DB: d.DB}
	id := func() (n int) {
		d.DB.View(func(tx *bolt.Tx) error { n = tx.ID(); return nil })
		return n
	}
	first, err := kp.Refill(context.Background(), 3)
	if err != nil || len(first) != 3 {
		t.Fatalf("Refill(3) = %d, %v", len(first), err)
	}
	before := id()
	again, err := kp.Refill(context.Background(), 3)
	if err != nil || len(again) != 3 {
		t.Fatalf("Refill(3) of a full pool = %d, %v; want the 3 unpublished", len(again), err)
	}
	if after := id(); after != before {
		t.Errorf("Refill of a full pool committed %d transactions", after-before)
	}
	if more, err := kp.Refill(context.Background(), 4); err != nil || len(more) != 4 || id() != before+1 {
		t.Errorf("Refill(4) = %d, %v, %d commits; want 4 and one commit", len(more), err, id()-before)
	}
	if again, _ := kp.Refill(context.Background(), 4); len(again) != 4 {
		t.Errorf("the KeyPackage made by Refill(4) was not kept: %d", len(again))
	}
}

// countingDB counts the transactions KeyPackages opens.
type countingDB struct {
	db            *bolt.DB
	views, writes int
}

func (c *countingDB) View(f func(*bolt.Tx) error) error {
	c.views++
	return c.db.View(f)
}

func (c *countingDB) Update(f func(*bolt.Tx) error) error {
	c.writes++
	return c.db.Update(f)
}

// TestAFullPoolOpensNoWriteTransaction: with the pool full and the
// last-resort KeyPackage confirmed, as at every empty wake, Refill and
// LastResort each find so in one read transaction and open no write
// transaction; one that must make a KeyPackage opens one, and commits it.
func TestAFullPoolOpensNoWriteTransaction(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.New(t0)
	d := newDevice(t, runtimetest.Key(t, 2), clk)
	db := &countingDB{db: d.DB}
	kp := sessions.KeyPackages{S: d.S, DB: db}
	kps, err := kp.Refill(ctx, 5)
	if err != nil || len(kps) != 5 {
		t.Fatalf("Refill(5) = %d, %v", len(kps), err)
	}
	lr, err := kp.LastResort(ctx)
	if err != nil || lr == nil {
		t.Fatalf("LastResort() = %v, %v; want one made", lr, err)
	}
	if db.writes != 2 {
		t.Errorf("making 5 KeyPackages and the last-resort one opened %d write transactions, want 2", db.writes)
	}
	held := &wire.Held{LastResort: wire.KeyPackageDigest(lr)}
	for _, b := range kps {
		held.Digests = append(held.Digests, wire.KeyPackageDigest(b))
	}
	if _, err := kp.Published(ctx, kps, held.Digests); err != nil {
		t.Fatal(err)
	}
	if err := kp.LastResortHeld(ctx, held.LastResort); err != nil {
		t.Fatal(err)
	}
	*db = countingDB{db: d.DB}
	kps, err = kp.Refill(ctx, 5)
	if err != nil || len(kps) != 0 {
		t.Fatalf("Refill(5) of a full published pool = %d, %v; want none", len(kps), err)
	}
	if lr, err = kp.LastResort(ctx); err != nil || lr != nil {
		t.Fatalf("LastResort() of a confirmed one = %v, %v; want nil", lr, err)
	}
	if db.writes != 0 || db.views != 2 {
		t.Errorf("Refill and LastResort of a full pool opened %d write and %d read transactions, want 0 and 2", db.writes, db.views)
	}
	*db = countingDB{db: d.DB}
	if kps, err = kp.Refill(ctx, 6); err != nil || len(kps) != 1 {
		t.Fatalf("Refill(6) = %d, %v; want the one made", len(kps), err)
	}
	if db.writes != 1 || db.views != 1 {
		t.Errorf("Refill(6) opened %d write and %d read transactions, want 1 and 1", db.writes, db.views)
	}
	if again, _ := kp.Refill(ctx, 6); !slices.EqualFunc(again, kps, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Errorf("the KeyPackage made by Refill(6) was not committed")
	}
}
