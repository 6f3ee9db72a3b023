package replay

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/store"
)

var t0 = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

const alice = "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"

// TxCache is the governed package's replay cache.
var _ governed.ReplayCache = (*TxCache)(nil)

func mustOpen(tb testing.TB, path string, o *Options) (*bolt.DB, *Cache) {
	tb.Helper()
	db, err := store.Open(path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := Open(db, o)
	if err != nil {
		db.Close()
		tb.Fatal(err)
	}
	return db, c
}

func seen(tb testing.TB, c *Cache, issuer, id string) bool {
	tb.Helper()
	ok, err := c.Seen(issuer, id)
	if err != nil {
		tb.Fatal(err)
	}
	return ok
}

func TestAdmitSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	clk := clocktest.New(t0)
	db, c := mustOpen(t, path, &Options{Clock: clk})
	if err := c.Admit(alice, "id-1", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !seen(t, c, alice, "id-1") || seen(t, c, alice, "id-2") || seen(t, c, "did:key:other", "id-1") {
		t.Fatal("Seen disagrees with what was admitted")
	}
	db.Close()
	db, c = mustOpen(t, path, &Options{Clock: clk})
	defer db.Close()
	if !seen(t, c, alice, "id-1") {
		t.Error("admission lost across reopen")
	}
}

func TestAdmitInCallersTransaction(t *testing.T) {
	db, c := mustOpen(t, filepath.Join(t.TempDir(), "agent.db"), &Options{Clock: clocktest.New(t0)})
	defer db.Close()
	boom := errors.New("MLS state write failed")
	err := db.Update(func(tx *bolt.Tx) error {
		r := c.Tx(tx)
		if err := r.Admit(alice, "rolled-back", t0.Add(time.Hour)); err != nil {
			return err
		}
		if ok, err := r.Seen(alice, "rolled-back", t0); !ok || err != nil {
			t.Errorf("Seen in the admitting transaction = %v, %v; want true", ok, err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if seen(t, c, alice, "rolled-back") {
		t.Error("an id whose transaction rolled back counts as admitted")
	}
	if s, _ := c.Stats(); s.Entries != 0 {
		t.Errorf("Entries = %d after rollback, want 0", s.Entries)
	}
	err = db.View(func(tx *bolt.Tx) error { return c.Tx(tx).Admit(alice, "x", t0) })
	if !errors.Is(err, ErrReadOnly) {
		t.Errorf("Admit in a read-only transaction = %v, want ErrReadOnly", err)
	}
}

func TestRetention(t *testing.T) {
	clk := clocktest.New(t0)
	db, c := mustOpen(t, filepath.Join(t.TempDir(), "agent.db"), &Options{Clock: clk})
	defer db.Close()
	exp := t0.Add(time.Minute)
	if err := c.Admit(alice, "a", exp); err != nil {
		t.Fatal(err)
	}
	// An earlier expiry never shortens the retention; a later one extends it.
	if err := c.Admit(alice, "a", t0); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		at   time.Time
		want bool
	}{
		{exp, true},
		{exp.Add(DefaultMargin - time.Nanosecond), true},
		{exp.Add(DefaultMargin), false},
	}
	for _, tt := range tests {
		clk.Set(tt.at)
		if got := seen(t, c, alice, "a"); got != tt.want {
			t.Errorf("Seen at expiry%+v = %v, want %v", tt.at.Sub(exp), got, tt.want)
		}
	}
	if err := c.Admit(alice, "a", clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !seen(t, c, alice, "a") {
		t.Error("re-admission after retention did not take")
	}
	if s, _ := c.Stats(); s.Entries != 1 {
		t.Errorf("Entries = %d, want 1", s.Entries)
	}
}

func TestSweep(t *testing.T) {
	clk := clocktest.New(t0)
	db, c := mustOpen(t, filepath.Join(t.TempDir(), "agent.db"), &Options{Clock: clk, Margin: time.Second})
	defer db.Close()
	err := db.Update(func(tx *bolt.Tx) error {
		for i := range 50 {
			if err := c.Tx(tx).Admit(alice, fmt.Sprint(i), t0.Add(time.Duration(i)*time.Minute)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	clk.Set(t0.Add(20*time.Minute + time.Second)) // entries 0..20 are past retention
	n, err := c.Sweep()
	if err != nil || n != 21 {
		t.Fatalf("Sweep = %d, %v; want 21", n, err)
	}
	if s, _ := c.Stats(); s.Entries != 29 || s.Evicted != 0 {
		t.Errorf("Stats = %+v, want 29 entries, 0 evicted", s)
	}
	// Admissions sweep a few expired entries each.
	clk.Set(t0.Add(30*time.Minute + time.Second)) // 21..30 expired: 10
	if err := c.Admit(alice, "new", clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if s, _ := c.Stats(); s.Entries != 29+1-sweepPerAdmit {
		t.Errorf("Entries after one admission = %d, want %d", s.Entries, 29+1-sweepPerAdmit)
	}
}

func TestBoundEvictsSoonestExpiring(t *testing.T) {
	clk := clocktest.New(t0)
	db, c := mustOpen(t, filepath.Join(t.TempDir(), "agent.db"), &Options{Clock: clk, MaxEntries: 3})
	defer db.Close()
	for _, e := range []struct {
		id  string
		ttl time.Duration
	}{{"late", 4 * time.Hour}, {"soon", time.Hour}, {"mid", 2 * time.Hour}, {"newest", 3 * time.Hour}} {
		if err := c.Admit(alice, e.id, t0.Add(e.ttl)); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for _, id := range []string{"late", "soon", "mid", "newest"} {
		got[id] = seen(t, c, alice, id)
	}
	if want := map[string]bool{"late": true, "soon": false, "mid": true, "newest": true}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after overflow Seen = %v, want %v", got, want)
	}
	if s, _ := c.Stats(); s.Entries != 3 || s.Evicted != 1 {
		t.Errorf("Stats = %+v, want 3 entries, 1 evicted", s)
	}
}

func TestHugeIDs(t *testing.T) {
	db, c := mustOpen(t, filepath.Join(t.TempDir(), "agent.db"), &Options{Clock: clocktest.New(t0)})
	defer db.Close()
	big := strings.Repeat("x", 1<<20) // beyond bbolt's 32 KiB key limit
	if err := c.Admit(alice, big, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if !seen(t, c, alice, big) || seen(t, c, alice, big[1:]) {
		t.Error("huge ids are not told apart")
	}
	// Far-future expiries saturate instead of wrapping.
	if err := c.Admit(alice, "forever", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if !seen(t, c, alice, "forever") {
		t.Error("far-future expiry wrapped")
	}
}

// TestReceiverWithStore runs the governed receiver checks against the
// store in the caller's transaction: accept, then replay refused after a
// restart.
func TestReceiverWithStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	b := []byte(`{"version":1,"id":"01948f00-0000-7000-8000-000000000001","issuerDid":"did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG","issuedAt":"2026-01-15T11:59:00.000Z","semantic":{"schema":"https://atom.qwixl.dev/schema/CommsMessage"},"payload":{"text":"hello"},"governance":{"purpose":"comms:message","ttlSeconds":3600},"signatureAlgorithm":"ed25519","signature":"cwqOWw+iVJSW7Yk5oObo4FbwMVTVuwCL7MBi+kDsvflJIa3DdaneMdXbhkufB3jRNupBd0MLriOEC6PluKNpBw=="}`)
	clk := clocktest.New(t0)
	r := &governed.Receiver{Purposes: []string{"comms:message"}, Clock: clk}
	accept := func(c *Cache, db *bolt.DB) error {
		return db.Update(func(tx *bolt.Tx) error {
			_, err := r.Accept(b, governed.Input{Replay: c.Tx(tx)})
			return err
		})
	}
	db, c := mustOpen(t, path, &Options{Clock: clk})
	if err := accept(c, db); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, c = mustOpen(t, path, &Options{Clock: clk})
	defer db.Close()
	clk.Advance(58 * time.Minute)
	if err := accept(c, db); governed.ReasonOf(err) != governed.ReasonReplay {
		t.Errorf("Accept after restart = %v, want replay", err)
	}
}
