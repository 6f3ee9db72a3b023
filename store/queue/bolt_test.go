package queue

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

var bg = context.Background()

func seqs(rs []Record) []uint64 {
	out := []uint64{}
	for _, r := range rs {
		out = append(out, r.Seq)
	}
	return out
}

func TestEnqueueSetsFields(t *testing.T) {
	s, _ := mustOpen(t)
	b := queuebounds.Default()
	now := time.Date(2026, 1, 15, 13, 0, 0, 5, time.FixedZone("CET", 3600))
	got := mustEnqueue(t, s, Record{Agent: agent, From: alice, Kind: KindHandshake, Body: []byte("welcome"),
		Seq: 99, EnqueuedAt: t0.Add(-time.Hour), ExpiresAt: t0}, b, now)
	want := Record{Seq: 1, Agent: agent, From: alice, Kind: KindHandshake, Body: []byte("welcome"),
		EnqueuedAt: now.UTC(), ExpiresAt: now.UTC().Add(b.TTL)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Enqueue returned (-want +got):\n%s", diff)
	}
	next, err := s.Next(bg, agent, 0, 10, now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Record{want}, next); diff != "" {
		t.Errorf("Next returned (-want +got):\n%s", diff)
	}
}

func TestNextAckOrder(t *testing.T) {
	s, _ := mustOpen(t)
	b := queuebounds.Default()
	for i := range 10 {
		r := mustEnqueue(t, s, msg(alice, string(rune('a'+i))), b, t0)
		if r.Seq != uint64(i+1) {
			t.Fatalf("enqueue %d got seq %d", i, r.Seq)
		}
	}
	other := mustEnqueue(t, s, Record{Agent: "did:key:other", From: alice, Body: []byte("z")}, b, t0)
	if other.Seq != 1 {
		t.Errorf("another agent's first seq = %d, want 1 (seqs are per agent)", other.Seq)
	}
	tests := []struct {
		after uint64
		max   int
		want  []uint64
	}{
		{0, 3, []uint64{1, 2, 3}},
		{3, 3, []uint64{4, 5, 6}},
		{8, 5, []uint64{9, 10}},
		{10, 5, []uint64{}},
		{0, 0, []uint64{}},
		{^uint64(0), 5, []uint64{}},
	}
	for _, tt := range tests {
		got, err := s.Next(bg, agent, tt.after, tt.max, t0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, seqs(got)); diff != "" {
			t.Errorf("Next(after %d, max %d) seqs (-want +got):\n%s", tt.after, tt.max, diff)
		}
	}
	if err := s.Ack(bg, agent, []uint64{1, 3, 3, 42}); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Next(bg, agent, 0, 100, t0)
	if diff := cmp.Diff([]uint64{2, 4, 5, 6, 7, 8, 9, 10}, seqs(got)); diff != "" {
		t.Errorf("after Ack(1, 3, 3, 42) seqs (-want +got):\n%s", diff)
	}
	if got[0].Body[0] != 'b' {
		t.Errorf("record 2 body = %q, want b", got[0].Body)
	}
	if err := s.Ack(bg, "did:key:nobody", []uint64{1}); err != nil {
		t.Errorf("Ack for an unknown agent = %v, want nil", err)
	}
	checkConsistent(t, s)
	// Acknowledge everything: seqs are never reused.
	if err := s.Ack(bg, agent, seqs(got)); err != nil {
		t.Fatal(err)
	}
	if r := mustEnqueue(t, s, msg(alice, "new"), b, t0); r.Seq != 11 {
		t.Errorf("seq after acknowledging everything = %d, want 11", r.Seq)
	}
	checkConsistent(t, s)
}

func TestExpiryAndPurge(t *testing.T) {
	s, _ := mustOpen(t)
	clk := clocktest.New(time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC))
	short, long := queuebounds.Default(), queuebounds.Default()
	short.TTL, long.TTL = time.Second, time.Hour
	mustEnqueue(t, s, msg(alice, "expires"), short, clk.Now())                                     // seq 1
	mustEnqueue(t, s, msg(bob, "stays"), long, clk.Now())                                          // seq 2
	mustEnqueue(t, s, Record{Agent: "did:key:x", From: bob, Body: []byte("x1")}, short, clk.Now()) // other agent
	clk.Advance(500 * time.Millisecond)
	mustEnqueue(t, s, Record{Agent: agent, From: alice, Kind: KindHandshake, Body: []byte("hs")}, short, clk.Now()) // seq 3

	stats := func() Stats { t.Helper(); return statsAt(t, s, clk.Now()) }
	live := func() []uint64 { t.Helper(); return liveAt(t, s, clk.Now()) }
	if diff := cmp.Diff(Stats{Messages: 3, Bytes: 14, Handshakes: 1, HandshakeBytes: 2}, stats()); diff != "" {
		t.Errorf("Stats before expiry (-want +got):\n%s", diff)
	}
	clk.Advance(500 * time.Millisecond) // 10:00:01: seq 1 expires at exactly now, still live
	if n, err := s.Purge(bg, clk.Now()); n != 0 || err != nil {
		t.Errorf("Purge at the expiry instant = %d, %v; want 0", n, err)
	}
	clk.Advance(time.Millisecond)
	// Expired but not purged: hidden from Next and Stats without a write.
	if diff := cmp.Diff([]uint64{2, 3}, live()); diff != "" {
		t.Errorf("Next after seq 1 expired (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Stats{Messages: 2, Bytes: 7, Handshakes: 1, HandshakeBytes: 2}, stats()); diff != "" {
		t.Errorf("Stats after seq 1 expired (-want +got):\n%s", diff)
	}
	clk.Advance(time.Second)
	if diff := cmp.Diff(Stats{Messages: 1, Bytes: 5}, stats()); diff != "" {
		t.Errorf("Stats after seq 3 expired (-want +got):\n%s", diff)
	}
	n, err := s.Purge(bg, clk.Now())
	if err != nil || n != 3 {
		t.Errorf("Purge = %d, %v; want 3 (two of agent, one of another)", n, err)
	}
	if n, _ := s.Purge(bg, clk.Now()); n != 0 {
		t.Errorf("second Purge = %d, want 0", n)
	}
	checkConsistent(t, s)
	if diff := cmp.Diff([]uint64{2}, live()); diff != "" {
		t.Errorf("Next after purge (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Stats{Messages: 1, Bytes: 5}, stats()); diff != "" {
		t.Errorf("Stats after purge (-want +got):\n%s", diff)
	}
	clk.Advance(2 * time.Hour)
	if got := live(); len(got) != 0 {
		t.Errorf("Next after every record expired = %v, want none", got)
	}
}

// statsAt returns the test agent's Stats at now.
func statsAt(t *testing.T, s *Bolt, now time.Time) Stats {
	t.Helper()
	st, err := s.Stats(bg, agent, now)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// liveAt returns the seqs of the test agent's live records at now.
func liveAt(t *testing.T, s *Bolt, now time.Time) []uint64 {
	t.Helper()
	rs, err := s.Next(bg, agent, 0, 100, now)
	if err != nil {
		t.Fatal(err)
	}
	return seqs(rs)
}

// TestPurgeUsesIndex shows that Purge reads the expiry index, not the
// records: a record whose index entry is gone is not found by Purge.
func TestPurgeUsesIndex(t *testing.T) {
	s, _ := mustOpen(t)
	b := queuebounds.Default()
	b.TTL = time.Second
	r := mustEnqueue(t, s, msg(alice, "x"), b, t0)
	if err := s.db.Update(func(tx *boltTx) error {
		return tx.Bucket(bucketExpiry).Delete(expiryKey(r.ExpiresAt, r.Seq, agent))
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Purge(bg, t0.Add(time.Hour)); n != 0 || err != nil {
		t.Errorf("Purge without index entries = %d, %v; want 0, nil", n, err)
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	s, err := OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := queuebounds.Default()
	b.MaxPerPeer = 2
	var want []Record
	for _, r := range []Record{msg(alice, "one"), msg(bob, "two"), {Agent: agent, From: alice, Kind: KindHandshake, Body: []byte("commit")}} {
		want = append(want, mustEnqueue(t, s, r, b, t0))
	}
	if err := s.Ack(bg, agent, []uint64{2}); err != nil {
		t.Fatal(err)
	}
	want = append(want[:1], want[2])
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Next(bg, agent, 0, 10, t0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records after reopen (-want +got):\n%s", diff)
	}
	// Counters survived too: alice is at her per-peer bound.
	if _, err := s.Enqueue(bg, msg(alice, "three"), b, t0); outcome(err) != BoundPeer {
		t.Errorf("Enqueue after reopen = %v, want peer bound", err)
	}
	if r := mustEnqueue(t, s, msg(bob, "four"), b, t0); r.Seq != 4 {
		t.Errorf("seq after reopen = %d, want 4", r.Seq)
	}
	checkConsistent(t, s)
}

func TestClosed(t *testing.T) {
	s, _ := mustOpen(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(bg, msg(alice, "x"), queuebounds.Default(), t0); !errors.Is(err, ErrClosed) {
		t.Errorf("Enqueue after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Next(bg, agent, 0, 1, t0); !errors.Is(err, ErrClosed) {
		t.Errorf("Next after Close = %v, want ErrClosed", err)
	}
	if err := s.Ack(bg, agent, []uint64{1}); !errors.Is(err, ErrClosed) {
		t.Errorf("Ack after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Purge(bg, t0); !errors.Is(err, ErrClosed) {
		t.Errorf("Purge after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Stats(bg, agent, t0); !errors.Is(err, ErrClosed) {
		t.Errorf("Stats after Close = %v, want ErrClosed", err)
	}
	if err := s.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
}

func TestNewSharesDB(t *testing.T) {
	s, _ := mustOpen(t)
	mustEnqueue(t, s, msg(alice, "x"), queuebounds.Default(), t0)
	shared, err := New(s.DB())
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := shared.Stats(bg, agent, t0); st.Messages != 1 {
		t.Errorf("Stats through New(db) = %+v, want 1 message", st)
	}
	if err := shared.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stats(bg, agent, t0); err != nil {
		t.Errorf("closing a Bolt from New closed the shared DB: %v", err)
	}
}

func TestUnknownLayoutVersion(t *testing.T) {
	s, path := mustOpen(t)
	if err := s.db.Update(func(tx *boltTx) error { return tx.Bucket(bucketMeta).Put(keyVersion, []byte{9}) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := OpenBolt(path, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("OpenBolt of a version 9 file = %v, want ErrCorrupt", err)
	}
}

// TestMigrateV1 opens a file of layout 1, whose peer values held only a
// record count, and checks that the per-peer byte bound is exact on it.
func TestMigrateV1(t *testing.T) {
	s, path := mustOpen(t)
	b := with(func(b *queuebounds.Bounds) { b.MaxPeerBytes = 10 })
	for _, r := range []Record{msg(alice, "12345"), msg(alice, "123"), msg(bob, "1")} {
		mustEnqueue(t, s, r, b, t0)
	}
	acked := mustEnqueue(t, s, msg(alice, "1234567890"), queuebounds.Default(), t0)
	if err := s.Ack(bg, agent, []uint64{acked.Seq}); err != nil {
		t.Fatal(err)
	}
	err := s.db.Update(func(tx *boltTx) error { // write it as layout 1
		peers := tx.Bucket(bucketAgents).Bucket([]byte(agent)).Bucket(bucketPeers)
		for _, p := range []string{alice, bob} {
			v := peers.Get([]byte(p))
			if err := peers.Put([]byte(p), bytes.Clone(v[:8])); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keyVersion, []byte{1})
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = OpenBolt(path, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkConsistent(t, s)
	if err := s.db.View(func(tx *boltTx) error {
		if v := tx.Bucket(bucketMeta).Get(keyVersion); !bytes.Equal(v, []byte{layoutVersion}) {
			t.Errorf("layout version after migration = %x, want %d", v, layoutVersion)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(bg, msg(alice, "123"), b, t0); outcome(err) != BoundPeer {
		t.Errorf("alice's 9th..11th byte after migration: %v, want %s", err, BoundPeer)
	}
	mustEnqueue(t, s, msg(alice, "12"), b, t0)
	mustEnqueue(t, s, msg(bob, "123456789"), b, t0)
	checkConsistent(t, s)
}

func TestRecordCodec(t *testing.T) {
	r := Record{Agent: agent, From: alice, Kind: KindHandshake, EnqueuedAt: t0, ExpiresAt: t0.Add(time.Hour), Body: []byte{0, 1, 2}}
	v, err := encodeRecord(r, 7)
	if err != nil {
		t.Fatal(err)
	}
	if v[0] != recordVersion {
		t.Errorf("first byte = %d, want version %d", v[0], recordVersion)
	}
	got, err := decodeRecord(agent, 7, v)
	if err != nil {
		t.Fatal(err)
	}
	r.Seq = 7
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	// Overhead beyond the body and sender: version, checksum, array header, kind, two times.
	if over := len(v) - len(r.Body) - len(r.From); over > 28 {
		t.Errorf("record overhead = %d bytes, want at most 28", over)
	}
	flipped := bytes.Clone(v)
	flipped[len(flipped)-1] ^= 1
	bad := map[string][]byte{
		"empty":             nil,
		"unknown version":   append([]byte{3}, v[1:]...),
		"truncated":         v[:len(v)-1],
		"trailing field":    append([]byte{1, 0x86}, append(v[6:], 0)...),
		"unknown kind":      func() []byte { w, _ := encodeRecord(Record{Agent: agent, Kind: 5}, 1); return w }(),
		"body byte flipped": flipped,
		"another key":       v, // decoded at seq 1 below, stored for 7
	}
	for name, b := range bad {
		if _, err := decodeRecord(agent, 1, b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeRecord(%s) = %v, want ErrCorrupt", name, err)
		}
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindMessage: "message", KindHandshake: "handshake", 9: "Kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, got, want)
		}
	}
}
