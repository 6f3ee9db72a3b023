package pulse

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store"
)

var t0 = time.Date(2026, 1, 15, 14, 11, 0, 0, time.UTC)

func openDB(t testing.TB, path string) *bolt.DB {
	t.Helper()
	db, err := store.Open(path, &store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestSignParse(t *testing.T) {
	k := didtest.Key(t, 1)
	p := Pulse{Agent: k.DID(), Seq: 1, At: t0, NextWake: t0.Add(time.Hour), Mode: "hourly_wake"}
	doc, err := Sign(k, p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(doc)
	if err != nil {
		t.Fatalf("Parse(%s): %v", doc, err)
	}
	if diff := cmp.Diff(p, got, cmp.Comparer(func(a, b did.DID) bool { return a == b })); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
	if !bytes.Contains(doc, []byte(`"nextWake":"2026-01-15T15:11:00.000Z"`)) {
		t.Errorf("document %s lacks the next wake in RFC 3339", doc)
	}
	if _, err := Sign(didtest.Key(t, 2), p); err == nil {
		t.Error("Sign with another agent's key: nil error")
	}
}

func TestParseRejects(t *testing.T) {
	k := didtest.Key(t, 1)
	doc, _ := Sign(k, Pulse{Agent: k.DID(), Seq: 1, At: t0, Mode: "sleep"})
	// Re-sign a modified document with Bob's key while keeping Alice as agent.
	var m map[string]any
	json.Unmarshal(doc, &m)
	tamper := func(f func(map[string]any)) []byte {
		c := map[string]any{}
		for k, v := range m {
			c[k] = v
		}
		f(c)
		b, _ := json.Marshal(c)
		return b
	}
	tests := []struct {
		name string
		doc  []byte
		want error
	}{
		{"mode changed", tamper(func(c map[string]any) { c["mode"] = "always_on" }), ErrSignature},
		{"halt removed", tamper(func(c map[string]any) { c["halted"] = true }), ErrSignature},
		{"other agent", tamper(func(c map[string]any) { c["agent"] = didtest.Key(t, 2).DID().String() }), ErrSignature},
		{"unknown member", tamper(func(c map[string]any) { c["extra"] = 1 }), ErrMalformed},
		{"version 2", tamper(func(c map[string]any) { c["v"] = 2 }), ErrMalformed},
		{"seq 2 without prev", tamper(func(c map[string]any) { c["seq"] = 2 }), ErrMalformed},
		{"not canonical", append([]byte(" "), doc...), ErrMalformed},
		{"not json", []byte("pulse"), ErrMalformed},
		{"too big", bytes.Repeat([]byte("x"), MaxSize+1), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse(tt.doc); !errors.Is(err, tt.want) {
				t.Fatalf("Parse = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestChainSurvivesRestart(t *testing.T) {
	k := didtest.Key(t, 1)
	path := filepath.Join(t.TempDir(), "agent.db")
	var docs [][]byte
	now := t0
	for boot := 0; boot < 3; boot++ {
		db := openDB(t, path)
		c, err := OpenChain(db, k)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			err := db.Update(func(tx *bolt.Tx) error {
				doc, p, err := c.Next(tx, now, now.Add(time.Hour), "hourly_wake", false)
				if err == nil && p.Seq != uint64(len(docs)+1) {
					t.Errorf("seq = %d, want %d", p.Seq, len(docs)+1)
				}
				docs = append(docs, doc)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			now = now.Add(time.Hour)
		}
		db.Close()
	}
	for i := 1; i < len(docs); i++ {
		if err := VerifyNext(docs[i-1], docs[i]); err != nil {
			t.Fatalf("VerifyNext(%d, %d): %v", i, i+1, err)
		}
	}
	if err := VerifyNext(docs[0], docs[2]); !errors.Is(err, ErrBrokenChain) {
		t.Fatalf("VerifyNext skipping a pulse: err = %v, want ErrBrokenChain", err)
	}
}

func TestChainClockSetBack(t *testing.T) {
	k := didtest.Key(t, 1)
	db := openDB(t, filepath.Join(t.TempDir(), "agent.db"))
	defer db.Close()
	c, _ := OpenChain(db, k)
	var a, b []byte
	db.Update(func(tx *bolt.Tx) error { a, _, _ = c.Next(tx, t0, time.Time{}, "sleep", false); return nil })
	db.Update(func(tx *bolt.Tx) error {
		b, _, _ = c.Next(tx, t0.Add(-time.Hour), time.Time{}, "sleep", true)
		return nil
	})
	if err := VerifyNext(a, b); err != nil {
		t.Fatalf("chain after the wall clock went back: %v", err)
	}
}

func TestChainRefusesForeignHead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	db := openDB(t, path)
	defer db.Close()
	c, _ := OpenChain(db, didtest.Key(t, 1))
	db.Update(func(tx *bolt.Tx) error { _, _, err := c.Next(tx, t0, time.Time{}, "sleep", false); return err })
	other, _ := OpenChain(db, didtest.Key(t, 2))
	err := db.Update(func(tx *bolt.Tx) error { _, _, err := other.Next(tx, t0, time.Time{}, "sleep", false); return err })
	if err == nil || !strings.Contains(err.Error(), "belongs to") {
		t.Fatalf("Next with another key over an existing chain: err = %v", err)
	}
}

// TestChainContinuesAfterSucceed: after a key rotation the chain goes on
// under the new key, linked to the old head; a third key is still refused.
func TestChainContinuesAfterSucceed(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "a.db"))
	defer db.Close()
	old, next := didtest.Key(t, 1), didtest.Key(t, 2)
	c, _ := OpenChain(db, old)
	var oldHead []byte
	db.Update(func(tx *bolt.Tx) (err error) {
		oldHead, _, err = c.Next(tx, t0, time.Time{}, "sleep", false)
		return err
	})
	c2, _ := OpenChain(db, next)
	if err := db.View(func(tx *bolt.Tx) error { _, _, _, err := c2.Head(tx); return err }); err == nil {
		t.Fatal("the new key accepted the old key's head before Succeed")
	}
	if err := db.Update(func(tx *bolt.Tx) error { return Succeed(tx, old.DID()) }); err != nil {
		t.Fatal(err)
	}
	var doc []byte
	var p Pulse
	err := db.Update(func(tx *bolt.Tx) (err error) {
		doc, p, err = c2.Next(tx, t0.Add(time.Hour), time.Time{}, "sleep", false)
		return err
	})
	if err != nil || p.Seq != 2 || p.Prev != Hash(oldHead) || p.Agent != next.DID() {
		t.Fatalf("first pulse after the rotation = %+v, %v; want seq 2 by the new key, linked to the old head", p, err)
	}
	if err := VerifyNext(oldHead, doc); !errors.Is(err, ErrBrokenChain) {
		t.Errorf("VerifyNext across the rotation = %v; want ErrBrokenChain (it knows no handover)", err)
	}
	// The predecessor is forgotten once the new key made a head: the old
	// key, or a third, cannot take the chain back.
	third, _ := OpenChain(db, old)
	if err := db.View(func(tx *bolt.Tx) error { _, _, _, err := third.Head(tx); return err }); err == nil {
		t.Error("the old key accepted the new key's head")
	}
}

// TestChainHeadVerifiesWhatItDidNotSign: the head the chain just signed is
// returned as Parse returns it without being parsed and verified again
// (far fewer allocations than a verification), while a stored head that
// changed behind the chain's back (corruption, another writer) is still
// verified and refused.
func TestChainHeadVerifiesWhatItDidNotSign(t *testing.T) {
	k := didtest.Key(t, 1)
	db := openDB(t, filepath.Join(t.TempDir(), "agent.db"))
	defer db.Close()
	c, _ := OpenChain(db, k)
	var doc []byte
	for i := range 2 {
		if err := db.Update(func(tx *bolt.Tx) (err error) {
			doc, _, err = c.Next(tx, t0.Add(time.Duration(i)*time.Hour+123456789), t0.Add(time.Duration(i+1)*time.Hour+987654321), "hourly_wake", false)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	want, err := Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	head := func(c *Chain) (p Pulse, err error) {
		err = db.View(func(tx *bolt.Tx) error { _, p, _, err = c.Head(tx); return err })
		return p, err
	}
	if got, err := head(c); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Head after Next = %+v, %v; want Parse's %+v", got, err, want)
	}
	fresh, _ := OpenChain(db, k) // knows no head: parses and verifies it
	known := testing.AllocsPerRun(20, func() { head(c) })
	parsed := testing.AllocsPerRun(20, func() { head(&Chain{db: db, key: k}) })
	if known*4 > parsed {
		t.Errorf("Head of the head it signed: %v allocations; of a head it parses and verifies: %v; want a quarter or less", known, parsed)
	}
	if got, err := head(fresh); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Head of a new Chain = %+v, %v; want %+v", got, err, want)
	}

	forged := bytes.Replace(doc, []byte(`"seq":2`), []byte(`"seq":9`), 1)
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(keyHead, forged) }); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []*Chain{c, fresh} {
		if _, err := head(ch); !errors.Is(err, ErrSignature) {
			t.Errorf("Head of a head changed in the store = %v, want %v", err, ErrSignature)
		}
	}
}
