package queue

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

var errInjected = errors.New("injected failure")

// failAt returns a failure hook that fails at point for records matching
// match (every record when match is nil).
func failAt(point string, match func(Record) bool) func(string, Record) error {
	return func(p string, r Record) error {
		if p == point && (match == nil || match(r)) {
			return fmt.Errorf("%w at %s", errInjected, p)
		}
		return nil
	}
}

// TestFailureLeavesNothingHalfWritten aborts write transactions at every
// point between their writes and checks the file is byte for byte what it
// was, and that the store carries on as if the call never happened.
func TestFailureLeavesNothingHalfWritten(t *testing.T) {
	b := queuebounds.Default()
	b.TTL = time.Minute
	tests := []struct {
		name, point string
		op          func(s *Bolt) error
	}{
		{"enqueue after record", "enqueue:after-record", enqueueOp},
		{"enqueue after index", "enqueue:after-index", enqueueOp},
		{"enqueue after peer", "enqueue:after-peer", enqueueOp},
		{"enqueue after counters", "enqueue:after-counters", enqueueOp},
		{"ack", "remove:after-record", func(s *Bolt) error { return s.Ack(bg, agent, []uint64{1, 2}) }},
		{"purge", "remove:after-record", func(s *Bolt) error { _, err := s.Purge(bg, t0.Add(time.Hour)); return err }},
		// An enqueue purges expired records first; a failure there aborts
		// the enqueue too.
		{"purge before enqueue", "remove:after-record", func(s *Bolt) error {
			_, err := s.Enqueue(bg, msg(bob, "late"), queuebounds.Default(), t0.Add(time.Hour))
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := mustOpen(t)
			mustEnqueue(t, s, msg(alice, "one"), b, t0)
			mustEnqueue(t, s, Record{Agent: agent, From: bob, Kind: KindHandshake, Body: []byte("two")}, b, t0)
			before := dump(t, s)
			s.fail = failAt(tt.point, nil)
			if err := tt.op(s); !errors.Is(err, errInjected) {
				t.Fatalf("operation with a failure at %s = %v, want the injected error", tt.point, err)
			}
			if after := dump(t, s); after != before {
				t.Errorf("failed transaction changed the file:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			s.fail = nil
			if err := tt.op(s); err != nil {
				t.Fatalf("operation without the failure = %v", err)
			}
			checkConsistent(t, s)
			r := mustEnqueue(t, s, msg(alice, "next"), queuebounds.Default(), t0.Add(2*time.Hour))
			if r.Seq != 3 && r.Seq != 4 {
				t.Errorf("seq after recovery = %d: a failed enqueue consumed a seq", r.Seq)
			}
		})
	}
}

func enqueueOp(s *Bolt) error {
	_, err := s.Enqueue(bg, msg(alice, "three"), queuebounds.Default(), t0)
	return err
}

// TestFailureInBatch fails some enqueues inside shared group commits: bbolt
// re-runs the rest of the batch, which must commit each of them exactly
// once, and the failed ones not at all.
func TestFailureInBatch(t *testing.T) {
	s, _ := mustOpen(t)
	var (
		mu   sync.Mutex
		runs int // runs of the enqueue function for healthy records
	)
	poison := failAt("enqueue:after-peer", func(r Record) bool { return bytes.HasPrefix(r.Body, []byte("poison")) })
	s.fail = func(p string, r Record) error {
		if p == "enqueue:after-counters" {
			mu.Lock()
			runs++
			mu.Unlock()
		}
		return poison(p, r)
	}
	const n = 48
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprint("ok-", i)
			if i%6 == 0 {
				body = fmt.Sprint("poison-", i)
			}
			<-start
			_, errs[i] = s.Enqueue(bg, msg(fmt.Sprint("did:key:s", i), body), queuebounds.Default(), t0)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if poisoned := i%6 == 0; poisoned != errors.Is(err, errInjected) || (!poisoned && err != nil) {
			t.Errorf("sender %d: err = %v", i, err)
		}
	}
	rs, err := s.Next(bg, agent, 0, 100, t0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, r := range rs {
		if r.Seq != uint64(i+1) {
			t.Errorf("record %d has seq %d, want contiguous seqs", i, r.Seq)
		}
		if bytes.HasPrefix(r.Body, []byte("poison")) || seen[string(r.Body)] {
			t.Errorf("record %q stored wrongly (poisoned or duplicated)", r.Body)
		}
		seen[string(r.Body)] = true
	}
	if len(rs) != n-n/6 {
		t.Errorf("%d records stored, want %d", len(rs), n-n/6)
	}
	if runs <= len(rs) {
		t.Errorf("healthy enqueue functions ran %d times for %d records: no batch was re-run, the test proved nothing", runs, len(rs))
	}
	checkConsistent(t, s)
}

// TestStoreFullMidway fills a size-capped file until bbolt refuses to grow
// it: the failing commit leaves the store consistent, every acknowledged
// record readable after reopening, and the error says the file is full.
func TestStoreFullMidway(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.db")
	opts := &Options{Store: &store.Options{MaxSize: 1 << 20}}
	s, err := OpenBolt(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	b := queuebounds.Default()
	b.MaxBytes, b.MaxMessages, b.MaxPerPeer, b.MaxPeerBytes = 1<<30, 1<<20, 1<<20, 1<<30
	var ok int
	for i := 0; i < 100; i++ {
		_, err = s.Enqueue(bg, msg(alice, string(bytes.Repeat([]byte{byte(i)}, 32<<10))), b, t0)
		if err != nil {
			break
		}
		ok++
	}
	if !errors.Is(err, store.ErrFull) {
		t.Fatalf("filling a 1 MiB store: err = %v after %d records, want store.ErrFull", err, ok)
	}
	checkConsistent(t, s)
	s.Close()
	s, err = OpenBolt(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rs, err := s.Next(bg, agent, 0, 1000, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != ok {
		t.Fatalf("%d records after reopen, want the %d acknowledged", len(rs), ok)
	}
	for i, r := range rs {
		if len(r.Body) != 32<<10 || r.Body[0] != byte(i) || r.Body[len(r.Body)-1] != byte(i) {
			t.Errorf("record %d torn", i)
		}
	}
	// Acknowledging frees room again, though not page for page: bbolt keeps
	// up to four of these records in one leaf and rewrites the whole leaf,
	// a contiguous run of pages, on every append, so the pages freed by a
	// few records need not take one more (acking 4 of ~22 left no room 1
	// run in 40, and refilling as many as were acked failed at the 19th).
	// With every record acked, the first leaf's four fit.
	if err := s.Ack(bg, agent, seqs(rs)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		mustEnqueue(t, s, msg(bob, string(bytes.Repeat([]byte{byte(i)}, 32<<10))), b, t0)
	}
	checkConsistent(t, s)
}
