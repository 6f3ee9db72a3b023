package agents

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/wake"
)

// TestGetSeesEveryWrite: Get answers what is stored after Put, after a
// write to the file that does not go through Bolt (another user of the
// same *bolt.DB), and after Forget, although it caches decoded states.
func TestGetSeesEveryWrite(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "agents.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := NewBolt(db)
	if err != nil {
		t.Fatal(err)
	}
	ctx, agent := context.Background(), "did:key:zA"
	check := func(want string) {
		t.Helper()
		st, err := s.Get(ctx, agent)
		if err != nil || string(st.Card) != want {
			t.Fatalf("Get = card %q, %v; want %q", st.Card, err, want)
		}
	}
	for _, card := range []string{"one", "one", "two"} {
		if err := s.Put(ctx, agent, State{Mode: wake.Sleep, Card: []byte(card)}, nil, nil); err != nil {
			t.Fatal(err)
		}
		check(card)
		check(card)
	}
	raw, _ := encodeState(State{Mode: wake.Sleep, Card: []byte("three")})
	if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketAgents).Put([]byte(agent), raw) }); err != nil {
		t.Fatal(err)
	}
	check("three")
	if err := s.Forget(ctx, agent); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, agent); !errors.Is(err, ErrUnknownAgent) {
		t.Fatalf("Get after Forget: %v, want ErrUnknownAgent", err)
	}
}

// TestStateCacheBounded: more agents than the cache holds are all read
// right, and the cache stays within its bounds.
func TestStateCacheBounded(t *testing.T) {
	s, err := OpenBolt(filepath.Join(t.TempDir(), "agents.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := maxCachedStates + 100
	err = s.db.Update(func(tx *bolt.Tx) error {
		for i := range n {
			raw, _ := encodeState(State{Mode: wake.Sleep, Card: fmt.Appendf(nil, "card %d", i)})
			if err := tx.Bucket(bucketAgents).Put(fmt.Appendf(nil, "did:key:z%d", i), raw); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		for i := range n {
			st, err := s.Get(context.Background(), fmt.Sprintf("did:key:z%d", i))
			if err != nil || string(st.Card) != fmt.Sprintf("card %d", i) {
				t.Fatalf("agent %d: card %q, %v", i, st.Card, err)
			}
		}
	}
	if len(s.states.m) > maxCachedStates || s.states.bytes > maxCachedStateBytes {
		t.Errorf("cache holds %d states, %d bytes; bounds %d, %d", len(s.states.m), s.states.bytes, maxCachedStates, maxCachedStateBytes)
	}
}

// TestOwnedGetSeesEveryWrite: a Bolt that owns its file answers a Get from
// its cache without reading the file, and still answers what is stored
// after each Put and Forget, and an error once closed.
func TestOwnedGetSeesEveryWrite(t *testing.T) {
	s, err := OpenBolt(filepath.Join(t.TempDir(), "agents.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, agent, other := context.Background(), "did:key:zA", "did:key:zB"
	check := func(agent, want string) {
		t.Helper()
		st, err := s.Get(ctx, agent)
		if err != nil || string(st.Card) != want {
			t.Fatalf("Get(%s) = card %q, %v; want %q", agent, st.Card, err, want)
		}
	}
	for _, card := range []string{"one", "one", "two"} {
		if err := s.Put(ctx, agent, State{Mode: wake.Sleep, Card: []byte(card)}, nil, nil); err != nil {
			t.Fatal(err)
		}
		check(agent, card)
		check(agent, card)
	}
	if err := s.Put(ctx, other, State{Mode: wake.Sleep, Card: []byte("b")}, nil, nil); err != nil {
		t.Fatal(err)
	}
	check(other, "b")
	check(agent, "two")
	if err := s.Forget(ctx, agent); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, agent); !errors.Is(err, ErrUnknownAgent) {
		t.Fatalf("Get after Forget: %v, want ErrUnknownAgent", err)
	}
	check(other, "b")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, other); err == nil {
		t.Fatal("Get after Close answered from the cache, want an error")
	}
}

// TestOwnedGetReadsNothing: once a state is cached and nothing wrote the
// agents bucket since (a write of another bucket does not count), Get on a
// Bolt that owns its file allocates nothing: no read transaction (it took
// 6 or 7 allocations: bbolt's read transaction, bucket and cursor).
func TestOwnedGetReadsNothing(t *testing.T) {
	s, err := OpenBolt(filepath.Join(t.TempDir(), "agents.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, agent := context.Background(), "did:key:zA"
	if err := s.Put(ctx, agent, State{Mode: wake.Sleep, Card: []byte("card")}, nil, nil); err != nil {
		t.Fatal(err)
	}
	s.Get(ctx, agent)
	if n := testing.AllocsPerRun(100, func() { s.Get(ctx, agent) }); n != 0 {
		t.Errorf("a cached Get allocates %v times, want 0", n)
	}
	if err := s.Admit(ctx, agent); err != nil { // a write of another bucket
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { s.Get(ctx, agent) }); n != 0 {
		t.Errorf("a cached Get after Admit allocates %v times, want 0", n)
	}
}

// TestOwnedGetConcurrentWrites: a Get after a Put sees that Put, while
// other agents are written and read at the same time (run with -race).
func TestOwnedGetConcurrentWrites(t *testing.T) {
	s, err := OpenBolt(filepath.Join(t.TempDir(), "agents.db"), &store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		agent := fmt.Sprintf("did:key:z%d", w)
		wg.Go(func() { // the one writer of agent
			for i := range 50 {
				card := fmt.Sprint(i)
				if err := s.Put(ctx, agent, State{Mode: wake.Sleep, Card: []byte(card)}, nil, nil); err != nil {
					t.Error(err)
					return
				}
				if st, err := s.Get(ctx, agent); err != nil || string(st.Card) != card {
					t.Errorf("Get(%s) after Put of card %s = %q, %v", agent, card, st.Card, err)
					return
				}
			}
		})
		wg.Go(func() { // a reader of it
			for range 200 {
				s.Get(ctx, agent)
			}
		})
	}
	wg.Wait()
}
