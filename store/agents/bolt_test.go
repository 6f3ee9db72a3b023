package agents

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/wake"
)

// kp is a KeyPackage-shaped value; the store does not parse it.
func kp(tag byte) []byte { return []byte{0, 1, 0, 5, 0, 1, 0, 1, tag} }

func openBolt(tb testing.TB) (*Bolt, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "agents.db")
	s, err := OpenBolt(path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s, path
}

// TestStateRoundTripsAndSurvivesReopen: every member of a State comes
// back as it was put, also after the file is reopened, and Agents lists
// the agents with a state.
func TestStateRoundTripsAndSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	s, path := openBolt(t)
	if _, err := s.Get(ctx, "did:key:zA"); !errors.Is(err, ErrUnknownAgent) {
		t.Fatalf("Get before Put = %v, want ErrUnknownAgent", err)
	}
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	want := State{
		Mode: wake.HourlyWake, Window: wake.Window{Minute: 7, Length: 5 * time.Minute, Offset: 30 * time.Second},
		NextWake: at.Add(time.Hour), Card: []byte(`{"card":1}`), Pulse: []byte(`{"pulse":1}`),
		Bounds: queue.DefaultBounds(), UpdatedAt: at,
	}
	if err := s.Put(ctx, "did:key:zA", want, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "did:key:zB", State{Mode: wake.Sleep, UpdatedAt: at}, nil, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, err := OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, err := s2.Get(ctx, "did:key:zA")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("state after reopen (-want +got):\n%s", diff)
	}
	ids, err := s2.Agents(ctx)
	if err != nil || len(ids) != 2 || ids[0] != "did:key:zA" || ids[1] != "did:key:zB" {
		t.Errorf("Agents = %q, %v; want zA and zB", ids, err)
	}
}

// TestTakeKeyPackageHandsEachOutOnce: concurrent takes never return the
// same pooled KeyPackage twice and return all of them, oldest first per
// caller; then every take returns the last-resort KeyPackage and keeps it.
func TestTakeKeyPackageHandsEachOutOnce(t *testing.T) {
	ctx := context.Background()
	s, _ := openBolt(t)
	const agent, n = "did:key:zA", 64
	pool := make([][]byte, n)
	for i := range pool {
		pool[i] = kp(byte(i))
	}
	if err := s.Put(ctx, agent, State{}, pool, kp(200)); err != nil {
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
		if got, last, err := s.TakeKeyPackage(ctx, agent); err != nil || !last || !bytes.Equal(got, kp(200)) {
			t.Errorf("empty pool: TakeKeyPackage = %x, %v, %v; want the last-resort one", got, last, err)
		}
	}
	if _, _, err := s.TakeKeyPackage(ctx, "did:key:zNone"); !errors.Is(err, ErrNoKeyPackage) {
		t.Errorf("an agent without KeyPackages: TakeKeyPackage = %v, want ErrNoKeyPackage", err)
	}
}

// TestPutPoolFullStoresNothing: a Put that would grow the pool past
// MaxKeyPackages changes neither the state, the pool nor the last-resort
// KeyPackage; KeyPackages lists the pool oldest first.
func TestPutPoolFullStoresNothing(t *testing.T) {
	ctx := context.Background()
	s, _ := openBolt(t)
	const agent = "did:key:zA"
	if err := s.Put(ctx, agent, State{Mode: wake.Sleep}, [][]byte{kp(1), kp(2)}, kp(9)); err != nil {
		t.Fatal(err)
	}
	big := make([][]byte, MaxKeyPackages-1)
	for i := range big {
		big[i] = kp(3)
	}
	err := s.Put(ctx, agent, State{Mode: wake.AlwaysOn}, big, kp(10))
	if !errors.Is(err, ErrPoolFull) {
		t.Fatalf("Put past the cap = %v, want ErrPoolFull", err)
	}
	if st, err := s.Get(ctx, agent); err != nil || st.Mode != wake.Sleep {
		t.Errorf("state after a refused Put = %v, %v; want the previous one (sleep)", st.Mode, err)
	}
	pool, lr, err := s.KeyPackages(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]byte{kp(1), kp(2)}, pool); diff != "" || !bytes.Equal(lr, kp(9)) {
		t.Errorf("after a refused Put: pool (-want +got):\n%s\nlast resort %x, want %x", diff, lr, kp(9))
	}
	if pool, lr, err := s.KeyPackages(ctx, "did:key:zNone"); err != nil || pool == nil || len(pool) != 0 || lr != nil {
		t.Errorf("KeyPackages of an unknown agent = %v, %x, %v; want an empty non-nil pool and no last resort", pool, lr, err)
	}
}

// BenchmarkTakeKeyPackage: a fetch from the pool deletes durably (a
// write transaction, fsync'd); one from an empty pool that serves the
// last-resort KeyPackage only reads, so a flood of them costs no writes.
func BenchmarkTakeKeyPackage(b *testing.B) {
	s, err := OpenBolt(b.TempDir()+"/agents.db", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const agent = "did:key:zA"
	if err := s.Put(ctx, agent, State{}, nil, kp(9)); err != nil {
		b.Fatal(err)
	}
	b.Run("pool", func(b *testing.B) {
		pool := make([][]byte, MaxKeyPackages)
		for i := range pool {
			pool[i] = kp(byte(i))
		}
		n := 0
		for b.Loop() {
			if n%MaxKeyPackages == 0 {
				b.StopTimer()
				if err := s.Put(ctx, agent, State{}, pool, nil); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			n++
			if _, last, err := s.TakeKeyPackage(ctx, agent); err != nil || last {
				b.Fatal(err, last)
			}
		}
		for {
			if _, last, _ := s.TakeKeyPackage(ctx, agent); last {
				break
			}
		}
	})
	b.Run("last-resort", func(b *testing.B) {
		for b.Loop() {
			if _, last, err := s.TakeKeyPackage(ctx, agent); err != nil || !last {
				b.Fatal(err, last)
			}
		}
	})
}
