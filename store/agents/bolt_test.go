package agents_test

import (
	"context"
	"testing"

	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/agents/agentstest"
	"github.com/torpor-dev/torpor/store/storetest"
)

// TestBolt runs the Store checks against Bolt; a store opened again is
// the same file reopened.
func TestBolt(t *testing.T) {
	agentstest.Run(t, storetest.InDir("agents.db", func(path string) (agents.Store, error) { return agents.OpenBolt(path, nil) }))
}

// BenchmarkTakeKeyPackage: a fetch from the pool deletes durably (a
// write transaction, fsync'd); one from an empty pool that serves the
// last-resort KeyPackage only reads, so a flood of them costs no writes.
func BenchmarkTakeKeyPackage(b *testing.B) {
	s, err := agents.OpenBolt(b.TempDir()+"/agents.db", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const agent = "did:key:zA"
	if err := s.Put(ctx, agent, agents.State{}, nil, agentstest.KP(9)); err != nil {
		b.Fatal(err)
	}
	b.Run("pool", func(b *testing.B) {
		pool := make([][]byte, agents.MaxKeyPackages)
		for i := range pool {
			pool[i] = agentstest.KP(byte(i))
		}
		n := 0
		meter := benchcpu.Start(b)
		for b.Loop() {
			if n%agents.MaxKeyPackages == 0 {
				b.StopTimer()
				if err := s.Put(ctx, agent, agents.State{}, pool, nil); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			n++
			if _, last, err := s.TakeKeyPackage(ctx, agent); err != nil || last {
				b.Fatal(err, last)
			}
		}
		meter.Stop()
		for {
			if _, last, _ := s.TakeKeyPackage(ctx, agent); last {
				break
			}
		}
	})
	b.Run("last-resort", func(b *testing.B) {
		meter := benchcpu.Start(b)
		for b.Loop() {
			if _, last, err := s.TakeKeyPackage(ctx, agent); err != nil || !last {
				b.Fatal(err, last)
			}
		}
		meter.Stop()
	})
}
