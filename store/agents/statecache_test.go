package agents

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
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
