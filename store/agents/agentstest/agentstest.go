// Package agentstest checks that an implementation of store/agents.Store
// keeps the promises the interface documents: what it stores comes back,
// also from a store opened again over the same data, a pooled KeyPackage
// is handed out once under concurrent takes, a refused Put stores nothing,
// and the history of wakes is a ring of at most MaxWakes. Bolt's tests run it; another backend's tests run it too.
package agentstest

import (
	"bytes"
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/storetest"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/wake"
)

// Opener opens a Store over one test's data: every call returns a new
// Store over the same data, which the caller closes.
type Opener = storetest.Opener[agents.Store]

// Run runs every check, each over fresh data from newOpener.
func Run(t *testing.T, newOpener func(t *testing.T) Opener) {
	storetest.RunContract(t, []storetest.Check[agents.Store]{
		{Name: "StateSurvivesReopen", Check: stateSurvivesReopen},
		{Name: "TakeHandsEachOutOnce", Check: takeHandsEachOutOnce},
		{Name: "PoolFullStoresNothing", Check: poolFullStoresNothing},
		{Name: "DropKeyPackages", Check: dropKeyPackages},
		{Name: "AdmitSurvivesForget", Check: admitSurvivesForget},
		{Name: "ForgetRemovesAll", Check: forgetRemovesAll},
		{Name: "WakesKeptAsBoundedRing", Check: wakesKeptAsBoundedRing},
		{Name: "WakesApartFromState", Check: wakesApartFromState},
	}, newOpener)
}

// KP is a KeyPackage-shaped value (MLSMessage version 1, wire_format 5)
// ending in tag; the store does not parse it.
func KP(tag byte) []byte { return []byte{0, 1, 0, 5, 0, 1, 0, 1, tag} }

// stateSurvivesReopen: every member of a State comes back as it was put,
// also from a store opened again, and Agents lists the agents with a
// state.
func stateSurvivesReopen(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	if _, err := s.Get(ctx, "did:key:zA"); !errors.Is(err, agents.ErrUnknownAgent) {
		t.Fatalf("Get before Put = %v, want agents.ErrUnknownAgent", err)
	}
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	want := agents.State{
		Mode: wake.HourlyWake, Window: wake.Window{Minute: 7, Length: 5 * time.Minute, Offset: 30 * time.Second},
		NextWake: at.Add(time.Hour), Card: []byte(`{"card":1}`), Pulse: []byte(`{"pulse":1}`),
		Bounds: queuebounds.Default(), UpdatedAt: at,
		Successor: "did:key:zNext", Retirement: []byte(`{"retirement":1}`),
		Status: []byte(`{"status":1}`), WakeSecond: 0, WakeSecondSet: true,
	}
	if err := s.Put(ctx, "did:key:zA", want, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "did:key:zB", agents.State{Mode: wake.Sleep, UpdatedAt: at}, nil, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2 := open(t)
	defer s2.Close()
	got, err := s2.Get(ctx, "did:key:zA")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("state after reopen (-want +got):\n%s", diff)
	}
	// An assigned second 0 is not "none", and none stays none.
	if got, err := s2.Get(ctx, "did:key:zB"); err != nil || got.WakeSecondSet {
		t.Errorf("state put without a wake second: WakeSecondSet %v, %v", got.WakeSecondSet, err)
	}
	want.WakeSecond = 59
	if err := s2.Put(ctx, "did:key:zA", want, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := s2.Get(ctx, "did:key:zA"); err != nil || !got.WakeSecondSet || got.WakeSecond != 59 {
		t.Errorf("wake second 59 put: got %d (set %v), %v", got.WakeSecond, got.WakeSecondSet, err)
	}
	ids, err := s2.Agents(ctx)
	sort.Strings(ids)
	if err != nil || len(ids) != 2 || ids[0] != "did:key:zA" || ids[1] != "did:key:zB" {
		t.Errorf("Agents = %q, %v; want zA and zB", ids, err)
	}
}

// takeHandsEachOutOnce: concurrent takes never return the same pooled
// KeyPackage twice and return all of them; then every take returns the
// last-resort KeyPackage and keeps it.
func takeHandsEachOutOnce(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	defer s.Close()
	const agent, n = "did:key:zA", 64
	pool := make([][]byte, n)
	for i := range pool {
		pool[i] = KP(byte(i))
	}
	if err := s.Put(ctx, agent, agents.State{}, pool, KP(200)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[byte]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range n / 8 {
				got, last, err := s.TakeKeyPackage(ctx, agent)
				if err != nil || last {
					t.Errorf("TakeKeyPackage = %v, last resort %v; want a pooled one", err, last)
					return
				}
				mu.Lock()
				seen[got[len(got)-1]]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d distinct KeyPackages handed out, want %d", len(seen), n)
	}
	for tag, c := range seen {
		if c != 1 {
			t.Errorf("KeyPackage %d handed out %d times", tag, c)
		}
	}
	for range 2 {
		if got, last, err := s.TakeKeyPackage(ctx, agent); err != nil || !last || !bytes.Equal(got, KP(200)) {
			t.Errorf("empty pool: TakeKeyPackage = %x, %v, %v; want the last-resort one", got, last, err)
		}
	}
	if _, _, err := s.TakeKeyPackage(ctx, "did:key:zNone"); !errors.Is(err, agents.ErrNoKeyPackage) {
		t.Errorf("an agent without KeyPackages: TakeKeyPackage = %v, want agents.ErrNoKeyPackage", err)
	}
}

// poolFullStoresNothing: a Put that would grow the pool past
// agents.MaxKeyPackages changes neither the state, the pool nor the last-resort
// KeyPackage; KeyPackages lists the pool oldest first.
func poolFullStoresNothing(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	defer s.Close()
	const agent = "did:key:zA"
	if err := s.Put(ctx, agent, agents.State{Mode: wake.Sleep}, [][]byte{KP(1), KP(2)}, KP(9)); err != nil {
		t.Fatal(err)
	}
	big := make([][]byte, agents.MaxKeyPackages-1)
	for i := range big {
		big[i] = KP(3)
	}
	err := s.Put(ctx, agent, agents.State{Mode: wake.AlwaysOn}, big, KP(10))
	if !errors.Is(err, agents.ErrPoolFull) {
		t.Fatalf("Put past the cap = %v, want agents.ErrPoolFull", err)
	}
	if st, err := s.Get(ctx, agent); err != nil || st.Mode != wake.Sleep {
		t.Errorf("state after a refused Put = %v, %v; want the previous one (sleep)", st.Mode, err)
	}
	pool, lr, err := s.KeyPackages(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]byte{KP(1), KP(2)}, pool); diff != "" || !bytes.Equal(lr, KP(9)) {
		t.Errorf("after a refused Put: pool (-want +got):\n%s\nlast resort %x, want %x", diff, lr, KP(9))
	}
	if pool, lr, err := s.KeyPackages(ctx, "did:key:zNone"); err != nil || pool == nil || len(pool) != 0 || lr != nil {
		t.Errorf("KeyPackages of an unknown agent = %v, %x, %v; want an empty non-nil pool and no last resort", pool, lr, err)
	}
}

// dropKeyPackages: DropKeyPackages removes exactly the KeyPackages drop
// selects, keeps the rest in order, leaves the state and the last-resort
// KeyPackage alone, and never brings back one taken before it.
func dropKeyPackages(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	defer s.Close()
	const agent = "did:key:zA"
	if err := s.Put(ctx, agent, agents.State{Mode: wake.Sleep}, [][]byte{KP(1), KP(2), KP(3), KP(4)}, KP(9)); err != nil {
		t.Fatal(err)
	}
	check := func(when string, want [][]byte) {
		t.Helper()
		pool, lr, err := s.KeyPackages(ctx, agent)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, pool); diff != "" || !bytes.Equal(lr, KP(9)) {
			t.Errorf("%s: pool (-want +got):\n%s\nlast resort %x, want %x", when, diff, lr, KP(9))
		}
	}
	if kp, _, err := s.TakeKeyPackage(ctx, agent); err != nil || !bytes.Equal(kp, KP(1)) {
		t.Fatalf("TakeKeyPackage = %x, %v", kp, err)
	}
	n, err := s.DropKeyPackages(ctx, agent, func(kp []byte) bool { return bytes.Equal(kp, KP(1)) || bytes.Equal(kp, KP(3)) })
	if err != nil || n != 1 {
		t.Errorf("DropKeyPackages of KP(1) (taken) and KP(3) = %d, %v; want 1", n, err)
	}
	check("after dropping one", [][]byte{KP(2), KP(4)})
	if err := s.Put(ctx, agent, agents.State{Mode: wake.Sleep}, [][]byte{KP(5)}, nil); err != nil {
		t.Fatal(err)
	}
	check("after a Put adding one", [][]byte{KP(2), KP(4), KP(5)})
	if n, err := s.DropKeyPackages(ctx, agent, func([]byte) bool { return true }); err != nil || n != 3 {
		t.Errorf("DropKeyPackages of all = %d, %v; want 3", n, err)
	}
	check("after dropping all", [][]byte{})
	if n, err := s.DropKeyPackages(ctx, "did:key:zNone", func([]byte) bool { return true }); err != nil || n != 0 {
		t.Errorf("DropKeyPackages of an unknown agent = %d, %v; want 0, nil", n, err)
	}
	if st, err := s.Get(ctx, agent); err != nil || st.Mode != wake.Sleep {
		t.Errorf("state after drops = %v, %v; want sleep", st.Mode, err)
	}
}

// admitSurvivesForget: an admission is durable (a store opened again
// knows it), idempotent, per agent, and outlives Forget.
func admitSurvivesForget(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	if ok, err := s.Admitted(ctx, "did:key:zA"); err != nil || ok {
		t.Fatalf("Admitted before Admit = %v, %v; want false", ok, err)
	}
	for range 2 {
		if err := s.Admit(ctx, "did:key:zA"); err != nil {
			t.Fatalf("Admit = %v", err)
		}
	}
	if err := s.Put(ctx, "did:key:zA", agents.State{Mode: wake.Sleep}, [][]byte{KP(1)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx, "did:key:zA"); err != nil {
		t.Fatal(err)
	}
	s.Close() // a Bolt file is opened by one store at a time
	s2 := open(t)
	defer s2.Close()
	if ok, err := s2.Admitted(ctx, "did:key:zA"); err != nil || !ok {
		t.Errorf("Admitted after Forget, reopened = %v, %v; want true", ok, err)
	}
	if ok, err := s2.Admitted(ctx, "did:key:zB"); err != nil || ok {
		t.Errorf("Admitted of another agent = %v, %v; want false", ok, err)
	}
}

// forgetRemovesAll: Forget removes the state, the pool and the last-resort
// KeyPackage of one agent, durably, and nothing of another; Usage counts
// the agents with a state; forgetting an unknown agent is no error.
func forgetRemovesAll(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	for _, a := range []string{"did:key:zA", "did:key:zB"} {
		if err := s.Put(ctx, a, agents.State{Mode: wake.Sleep}, [][]byte{KP(1), KP(2)}, KP(9)); err != nil {
			t.Fatal(err)
		}
	}
	if u, err := s.Usage(ctx); err != nil || u.Agents != 2 || u.Bytes <= 0 {
		t.Fatalf("Usage = %+v, %v; want 2 agents and some bytes", u, err)
	}
	if err := s.Forget(ctx, "did:key:zA"); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx, "did:key:zUnknown"); err != nil {
		t.Errorf("Forget of an unknown agent = %v", err)
	}
	s.Close() // a Bolt file is opened by one store at a time
	s2 := open(t)
	defer s2.Close()
	if _, err := s2.Get(ctx, "did:key:zA"); !errors.Is(err, agents.ErrUnknownAgent) {
		t.Errorf("Get after Forget = %v, want agents.ErrUnknownAgent", err)
	}
	if pool, lr, err := s2.KeyPackages(ctx, "did:key:zA"); err != nil || len(pool) != 0 || lr != nil {
		t.Errorf("KeyPackages after Forget = %d, %x, %v; want none", len(pool), lr, err)
	}
	if _, _, err := s2.TakeKeyPackage(ctx, "did:key:zA"); !errors.Is(err, agents.ErrNoKeyPackage) {
		t.Errorf("TakeKeyPackage after Forget = %v, want agents.ErrNoKeyPackage", err)
	}
	if pool, lr, err := s2.KeyPackages(ctx, "did:key:zB"); err != nil || len(pool) != 2 || lr == nil {
		t.Errorf("the other agent's KeyPackages = %d, %x, %v; want 2 and its last-resort one", len(pool), lr, err)
	}
	if u, err := s2.Usage(ctx); err != nil || u.Agents != 1 {
		t.Errorf("Usage after Forget = %+v, %v; want 1 agent", u, err)
	}
	if err := s2.Put(ctx, "did:key:zA", agents.State{Mode: wake.Sleep}, [][]byte{KP(3)}, nil); err != nil {
		t.Fatalf("Put after Forget = %v", err)
	}
	if pool, lr, err := s2.KeyPackages(ctx, "did:key:zA"); err != nil || len(pool) != 1 || lr != nil {
		t.Errorf("KeyPackages of the agent back after Forget = %d, %x, %v; want only the new one", len(pool), lr, err)
	}
}

// wakesKeptAsBoundedRing: recorded wakes come back oldest first, also from
// a store opened again; one at an instant already kept replaces it; never
// more than agents.MaxWakes are kept, the oldest dropped first, even when
// they arrive out of order.
func wakesKeptAsBoundedRing(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	const agent = "did:key:zA"
	if h, err := s.Wakes(ctx, agent); err != nil || h == nil || len(h) != 0 {
		t.Fatalf("Wakes before any = %v, %v; want an empty non-nil history", h, err)
	}
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	const n = agents.MaxWakes + 12
	for i := range n {
		w := agents.Wake{At: at.Add(time.Duration(i) * time.Hour), Reason: "schedule", QueueDepth: i, Missed: i % 3, Drained: i * 2, AwakeMs: int64(i) * 100, Relay: "https://relay.example"}
		if err := s.RecordWake(ctx, agent, w); err != nil {
			t.Fatal(err)
		}
		if h, err := s.Wakes(ctx, agent); err != nil || len(h) > agents.MaxWakes {
			t.Fatalf("after %d wakes: %d kept, %v; want at most %d", i+1, len(h), err, agents.MaxWakes)
		}
	}
	// An older wake than all kept falls off at once; one at a kept instant
	// replaces it.
	if err := s.RecordWake(ctx, agent, agents.Wake{At: at, Reason: "old"}); err != nil {
		t.Fatal(err)
	}
	last := agents.Wake{At: at.Add((n - 1) * time.Hour), Reason: "message", QueueDepth: 7, AwakeMs: 1500, Relay: "https://relay.example"}
	if err := s.RecordWake(ctx, agent, last); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2 := open(t)
	defer s2.Close()
	h, err := s2.Wakes(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != agents.MaxWakes {
		t.Fatalf("%d wakes kept after %d, want exactly %d", len(h), n+2, agents.MaxWakes)
	}
	first := n - agents.MaxWakes
	want0 := agents.Wake{At: at.Add(time.Duration(first) * time.Hour), Reason: "schedule", QueueDepth: first, Missed: first % 3, Drained: first * 2, AwakeMs: int64(first) * 100, Relay: "https://relay.example"}
	if diff := cmp.Diff(want0, h[0]); diff != "" {
		t.Errorf("oldest kept wake (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(last, h[len(h)-1]); diff != "" {
		t.Errorf("newest wake, replaced (-want +got):\n%s", diff)
	}
	for i := 1; i < len(h); i++ {
		if !h[i-1].At.Before(h[i].At) {
			t.Fatalf("wakes %d and %d out of order: %v, %v", i-1, i, h[i-1].At, h[i].At)
		}
	}
	if h, err := s2.Wakes(ctx, "did:key:zB"); err != nil || len(h) != 0 {
		t.Errorf("another agent's wakes = %d, %v; want none", len(h), err)
	}
}

// wakesApartFromState: Put leaves the history alone, Forget removes it,
// and an agent's history can be recorded again after.
func wakesApartFromState(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	defer s.Close()
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, a := range []string{"did:key:zA", "did:key:zB"} {
		if err := s.Put(ctx, a, agents.State{Mode: wake.Sleep}, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordWake(ctx, a, agents.Wake{At: at, Reason: "schedule"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, "did:key:zA", agents.State{Mode: wake.HourlyWake}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if h, err := s.Wakes(ctx, "did:key:zA"); err != nil || len(h) != 1 {
		t.Errorf("wakes after a Put = %d, %v; want the 1 recorded", len(h), err)
	}
	if err := s.Forget(ctx, "did:key:zA"); err != nil {
		t.Fatal(err)
	}
	if h, err := s.Wakes(ctx, "did:key:zA"); err != nil || len(h) != 0 {
		t.Errorf("wakes after Forget = %d, %v; want none", len(h), err)
	}
	if h, err := s.Wakes(ctx, "did:key:zB"); err != nil || len(h) != 1 {
		t.Errorf("the other agent's wakes after Forget = %d, %v; want 1", len(h), err)
	}
	if err := s.RecordWake(ctx, "did:key:zA", agents.Wake{At: at.Add(time.Hour)}); err != nil {
		t.Fatalf("RecordWake after Forget = %v", err)
	}
	if h, err := s.Wakes(ctx, "did:key:zA"); err != nil || len(h) != 1 || !h[0].At.Equal(at.Add(time.Hour)) {
		t.Errorf("wakes recorded after Forget = %v, %v; want only the new one", h, err)
	}
}
