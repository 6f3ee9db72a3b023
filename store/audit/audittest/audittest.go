// Package audittest checks that an implementation of store/audit.Store
// keeps the promises the interface documents: records come back newest
// first, also from a store opened again, pages follow each other, and
// the store keeps its bound, counting what it dropped. Bolt's tests run
// it, and so do store/jsstore's.
package audittest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/store/storetest"
)

// Max is the bound the stores under test must be opened with.
const Max = 5

// Opener opens a Store bounded to Max over one test's data.
type Opener = storetest.Opener[audit.Store]

// Run runs every check, each over fresh data from newOpener.
func Run(t *testing.T, newOpener func(t *testing.T) Opener) {
	storetest.RunContract(t, []storetest.Check[audit.Store]{
		{Name: "NewestFirstAfterReopen", Check: newestFirstAfterReopen},
		{Name: "Pages", Check: pages},
		{Name: "BoundDropsOldest", Check: boundDropsOldest},
		{Name: "RefusesNoAction", Check: refusesNoAction},
	}, newOpener)
}

var t0 = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

// rec is the record number i of a test.
func rec(i int) audit.Record {
	return audit.Record{Time: t0.Add(time.Duration(i) * time.Second), Operator: "did:key:zOperator", Action: audit.ActionPurge,
		Device: fmt.Sprintf("did:key:zDevice%d", i), Detail: "all", Outcome: audit.OK}
}

func appendN(t *testing.T, s audit.Store, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if err := s.Append(context.Background(), rec(i)); err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
	}
}

func list(t *testing.T, s audit.Store, before uint64, limit int) audit.Page {
	t.Helper()
	p, err := s.List(context.Background(), before, limit)
	if err != nil {
		t.Fatalf("List(%d, %d): %v", before, limit, err)
	}
	return p
}

// newestFirstAfterReopen: what was appended comes back whole, newest
// first, with Seqs from 1, from a store opened again.
func newestFirstAfterReopen(t *testing.T, open Opener) {
	s := open(t)
	appendN(t, s, 1, 3)
	s.Close()
	s = open(t)
	defer s.Close()
	p := list(t, s, 0, 0)
	if len(p.Records) != 3 || p.Dropped != 0 || p.Next != 0 {
		t.Fatalf("List = %d records, dropped %d, next %d; want 3, 0, 0", len(p.Records), p.Dropped, p.Next)
	}
	for i, r := range p.Records {
		want := rec(3 - i)
		want.Seq = uint64(3 - i)
		if !r.Time.Equal(want.Time) {
			t.Errorf("record %d: time %v, want %v", i, r.Time, want.Time)
		}
		r.Time = want.Time
		if r != want {
			t.Errorf("record %d = %+v, want %+v", i, r, want)
		}
	}
}

// pages: limit and before walk the log in pages that neither repeat nor
// skip a record.
func pages(t *testing.T, open Opener) {
	s := open(t)
	defer s.Close()
	appendN(t, s, 1, 4)
	p := list(t, s, 0, 3)
	if len(p.Records) != 3 || p.Records[0].Seq != 4 || p.Records[2].Seq != 2 || p.Next != 2 {
		t.Fatalf("first page: %d records from %v, next %d; want seqs 4..2, next 2", len(p.Records), seqs(p), p.Next)
	}
	p = list(t, s, p.Next, 3)
	if len(p.Records) != 1 || p.Records[0].Seq != 1 || p.Next != 0 {
		t.Fatalf("second page: %v, next %d; want seq 1, next 0", seqs(p), p.Next)
	}
	if p = list(t, s, 99, 1); len(p.Records) != 1 || p.Records[0].Seq != 4 {
		t.Fatalf("List(before 99) = %v, want seq 4", seqs(p))
	}
}

// boundDropsOldest: beyond Max records, the oldest go and are counted;
// Seqs keep increasing.
func boundDropsOldest(t *testing.T, open Opener) {
	s := open(t)
	appendN(t, s, 1, Max+3)
	s.Close()
	s = open(t)
	defer s.Close()
	appendN(t, s, Max+4, 1)
	p := list(t, s, 0, 0)
	if len(p.Records) != Max || p.Dropped != 4 {
		t.Fatalf("after %d appends: %d records (%v), dropped %d; want %d, 4", Max+4, len(p.Records), seqs(p), p.Dropped, Max)
	}
	if p.Records[0].Seq != Max+4 || p.Records[Max-1].Seq != 5 {
		t.Errorf("kept %v, want %d..5", seqs(p), Max+4)
	}
}

// refusesNoAction: a record without an action is refused.
func refusesNoAction(t *testing.T, open Opener) {
	s := open(t)
	defer s.Close()
	if err := s.Append(context.Background(), audit.Record{Outcome: audit.OK}); err == nil {
		t.Fatal("Append of a record without an action succeeded")
	}
	if p := list(t, s, 0, 0); len(p.Records) != 0 {
		t.Fatalf("List = %v, want nothing", seqs(p))
	}
}

func seqs(p audit.Page) []uint64 {
	var out []uint64
	for _, r := range p.Records {
		out = append(out, r.Seq)
	}
	return out
}
