// Package sharedtest checks that an implementation of store/shared.Store
// keeps the promises the interface documents, also between two Stores
// over the same data (two relays of a fleet): a token is spent once, and
// stays spent until its time passes; a limit is one bucket per key, with
// exactly its tokens taken under concurrent takes; a secret is created
// once; wake seconds are assigned from one count. Memory's tests run it, and store/jsstore's.
package sharedtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/store/shared"
	"github.com/torpor-dev/torpor/store/storetest"
)

// Opener opens a Store over one test's data: every call returns a new
// Store over the same data (for a fleet, another relay's connection).
type Opener = storetest.Opener[shared.Store]

// Run runs every check, each over fresh data from newOpener.
func Run(t *testing.T, newOpener func(t *testing.T) Opener) {
	storetest.RunContract(t, []storetest.Check[shared.Store]{
		{Name: "SpentOnce", Check: spentOnce},
		{Name: "SpentOnceUnderRace", Check: spentOnceUnderRace},
		{Name: "SpentUntilItsTime", Check: spentUntilItsTime},
		{Name: "LimiterBucket", Check: limiterBucket},
		{Name: "LimiterExactUnderRace", Check: limiterExactUnderRace},
		{Name: "SecretCreatedOnce", Check: secretCreatedOnce},
		{Name: "WakeSecondsSpread", Check: wakeSecondsSpread},
		{Name: "WakeSecondsUnderRace", Check: wakeSecondsUnderRace},
	}, newOpener)
}

var t0 = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

func digest(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// spentOnce: a token spent through one store is refused through it and
// through another over the same data; kinds are apart.
func spentOnce(t *testing.T, open Opener) {
	ctx := context.Background()
	a, b := open(t), open(t)
	k := digest("token-1")
	until := t0.Add(5 * time.Minute)
	if err := a.Spent("link", 100).Spend(ctx, k, until, t0); err != nil {
		t.Fatalf("first Spend: %v", err)
	}
	for i, s := range []shared.Store{a, b} {
		if err := s.Spent("link", 100).Spend(ctx, k, until, t0.Add(time.Minute)); !errors.Is(err, shared.ErrReplayed) {
			t.Fatalf("Spend again through store %d = %v, want shared.ErrReplayed", i, err)
		}
	}
	if err := b.Spent("login", 100).Spend(ctx, k, until, t0); err != nil {
		t.Fatalf("the same digest of another kind: %v", err)
	}
	if err := b.Spent("link", 100).Spend(ctx, digest("token-2"), until, t0); err != nil {
		t.Fatalf("another token: %v", err)
	}
}

// spentOnceUnderRace: 32 goroutines over two stores spend one token:
// exactly one succeeds, every other is told ErrReplayed.
func spentOnceUnderRace(t *testing.T, open Opener) {
	ctx := context.Background()
	stores := []shared.Store{open(t), open(t)}
	k := digest("raced")
	var ok, replayed atomic.Int32
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := stores[i%2].Spent("link", 100).Spend(ctx, k, t0.Add(time.Minute), t0)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, shared.ErrReplayed):
				replayed.Add(1)
			default:
				t.Errorf("Spend: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || replayed.Load() != 31 {
		t.Fatalf("%d spent, %d replayed; want 1 and 31", ok.Load(), replayed.Load())
	}
}

// spentUntilItsTime: a token stays spent up to its until and may be
// recorded again after it (a token past its expiry is refused for that
// anyway); the memory's bound refuses rather than forgets.
func spentUntilItsTime(t *testing.T, open Opener) {
	ctx := context.Background()
	a, b := open(t), open(t)
	k := digest("short")
	until := t0.Add(2 * time.Second)
	if err := a.Spent("op", 100).Spend(ctx, k, until, t0); err != nil {
		t.Fatal(err)
	}
	if err := b.Spent("op", 100).Spend(ctx, k, until, until); !errors.Is(err, shared.ErrReplayed) {
		t.Fatalf("Spend at its until = %v, want ErrReplayed", err)
	}
	if err := b.Spent("op", 100).Spend(ctx, k, until.Add(time.Minute), until.Add(time.Nanosecond)); err != nil {
		t.Fatalf("Spend after its until: %v", err)
	}
	if err := a.Spent("op", 100).Spend(ctx, k, until.Add(time.Minute), until.Add(time.Second)); !errors.Is(err, shared.ErrReplayed) {
		t.Fatalf("Spend of the token recorded again = %v, want ErrReplayed", err)
	}
	small := a.Spent("small", 2)
	for i := range 3 {
		err := small.Spend(ctx, digest(fmt.Sprint("s", i)), t0.Add(time.Minute), t0)
		if i < 2 && err != nil || i == 2 && err != nil && !errors.Is(err, shared.ErrFull) {
			t.Fatalf("Spend %d into a memory of 2: %v", i, err)
		}
	}
}

// limiterBucket: 3 per minute: 3 taken, the 4th refused with the wait
// until a token is back (20 s), through either store; after the wait one
// more; limiters and keys are apart.
func limiterBucket(t *testing.T, open Opener) {
	ctx := context.Background()
	a, b := open(t), open(t)
	rate := shared.Rate{N: 3, Per: time.Minute}
	la, lb := a.Limiter("budget", rate, 100), b.Limiter("budget", rate, 100)
	for i, l := range []shared.Limiter{la, lb, la} {
		if _, ok, err := l.Take(ctx, "did:key:zA", t0); !ok || err != nil {
			t.Fatalf("take %d: %v, %v", i, ok, err)
		}
	}
	wait, ok, err := lb.Take(ctx, "did:key:zA", t0)
	if ok || err != nil || wait != 20*time.Second {
		t.Fatalf("4th take = %v, %v, %v; want refused with wait 20s", wait, ok, err)
	}
	if _, ok, err := la.Take(ctx, "did:key:zA", t0.Add(20*time.Second)); !ok || err != nil {
		t.Fatalf("take after the wait: %v, %v", ok, err)
	}
	if _, ok, _ := lb.Take(ctx, "did:key:zA", t0.Add(20*time.Second)); ok {
		t.Fatal("a second take after a wait for one token succeeded")
	}
	if _, ok, err := la.Take(ctx, "did:key:zB", t0); !ok || err != nil {
		t.Fatalf("another key: %v, %v", ok, err)
	}
	if _, ok, err := a.Limiter("other", rate, 100).Take(ctx, "did:key:zA", t0); !ok || err != nil {
		t.Fatalf("another limiter: %v, %v", ok, err)
	}
}

// limiterExactUnderRace: 24 goroutines over two stores take from a
// bucket of 5: exactly 5 succeed.
func limiterExactUnderRace(t *testing.T, open Opener) {
	ctx := context.Background()
	rate := shared.Rate{N: 5, Per: time.Hour}
	ls := []shared.Limiter{open(t).Limiter("budget", rate, 100), open(t).Limiter("budget", rate, 100)}
	var taken atomic.Int32
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := ls[i%2].Take(ctx, "did:key:zRaced", t0)
			if err != nil {
				t.Errorf("Take: %v", err)
			}
			if ok {
				taken.Add(1)
			}
		}()
	}
	wg.Wait()
	if taken.Load() != 5 {
		t.Fatalf("%d tokens taken from a bucket of 5", taken.Load())
	}
}

// secretCreatedOnce: 16 concurrent first calls over two stores return the
// same SecretSize bytes; another name gives other bytes.
func secretCreatedOnce(t *testing.T, open Opener) {
	ctx := context.Background()
	stores := []shared.Store{open(t), open(t)}
	got := make([][]byte, 16)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := stores[i%2].Secret(ctx, "console")
			if err != nil {
				t.Errorf("Secret: %v", err)
			}
			got[i] = k
		}()
	}
	wg.Wait()
	for i, k := range got {
		if len(k) != shared.SecretSize || !bytes.Equal(k, got[0]) {
			t.Fatalf("secret %d = %x, want %d bytes equal to %x", i, k, shared.SecretSize, got[0])
		}
	}
	other, err := stores[1].Secret(ctx, "other")
	if err != nil || bytes.Equal(other, got[0]) {
		t.Fatalf("another name: %x, %v", other, err)
	}
}

// wakeSecondsSpread: 120 agents assigned in one minute through two stores
// fill every second twice; an agent assigned again keeps its second;
// Count moves an agent; a forgotten agent's second is the next one given.
func wakeSecondsSpread(t *testing.T, open Opener) {
	ctx := context.Background()
	ws := []shared.WakeSeconds{open(t).WakeSeconds(), open(t).WakeSeconds()}
	got := map[string]int{}
	for i := range 120 {
		agent := fmt.Sprint("did:key:zSpread", i)
		s, err := ws[i%2].Assign(ctx, agent, 7)
		if err != nil {
			t.Fatal(err)
		}
		got[agent] = s
	}
	for s := range 60 {
		if n, err := ws[s%2].Load(ctx, 7, s); n != 2 || err != nil {
			t.Fatalf("second %d of minute 7 holds %d (%v), want 2", s, n, err)
		}
	}
	if s, err := ws[1].Assign(ctx, "did:key:zSpread0", 7); s != got["did:key:zSpread0"] || err != nil {
		t.Fatalf("an agent assigned again: second %d (%v), want %d", s, err, got["did:key:zSpread0"])
	}
	moved := (got["did:key:zSpread1"] + 1) % 60
	if err := ws[0].Count(ctx, map[string]shared.Slot{"did:key:zSpread1": {Minute: 7, Second: moved}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := ws[1].Load(ctx, 7, moved); n != 3 {
		t.Fatalf("after Count moved an agent to second %d it holds %d, want 3", moved, n)
	}
	if err := ws[1].Forget(ctx, "did:key:zSpread2", 7); err != nil {
		t.Fatal(err)
	}
	// The forgotten agent's second and the moved one's old second hold
	// one agent each, every other at least two.
	free := got["did:key:zSpread2"]
	if s, err := ws[0].Assign(ctx, "did:key:zNew", 7); err != nil || s != got["did:key:zSpread1"] && s != free {
		t.Fatalf("a new agent after one was forgotten and one moved: second %d (%v), want %d or %d", s, err, free, got["did:key:zSpread1"])
	}
	if _, err := ws[0].Assign(ctx, "did:key:zBad", 60); err == nil {
		t.Fatal("Assign in minute 60: no error")
	}
}

// wakeSecondsUnderRace: 60 agents assigned at once in one minute through
// two stores get 60 different seconds.
func wakeSecondsUnderRace(t *testing.T, open Opener) {
	ctx := context.Background()
	ws := []shared.WakeSeconds{open(t).WakeSeconds(), open(t).WakeSeconds()}
	secs := make([]int, 60)
	var wg sync.WaitGroup
	for i := range secs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := ws[i%2].Assign(ctx, fmt.Sprint("did:key:zRace", i), 3)
			if err != nil {
				t.Errorf("Assign: %v", err)
			}
			secs[i] = s
		}()
	}
	wg.Wait()
	seen := map[int]bool{}
	for _, s := range secs {
		seen[s] = true
	}
	if len(seen) != 60 {
		t.Fatalf("60 agents assigned at once got %d different seconds, want 60", len(seen))
	}
}
