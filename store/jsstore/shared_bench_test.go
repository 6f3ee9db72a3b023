package jsstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/store/shared"
)

// BenchmarkShared: CPU per operation of the shared memories, 16
// concurrent callers, side by side in one run: the relay's own memory and
// the fleet's bucket on a 3-server cluster with 3 replicas (the embedded
// servers' CPU counted with the test process's). spend: a new token each
// time; take: a KeyPackage budget take over 64 agents; assign: a wake
// second in one of 60 minutes for a new agent.
func BenchmarkShared(b *testing.B) {
	b.Run("memory", func(b *testing.B) { benchShared(b, shared.NewMemory()) })
	b.Run("R3-cluster", func(b *testing.B) {
		c := openCluster(b, cluster(b))
		benchShared(b, c.Shared())
	})
}

func benchShared(b *testing.B, s shared.Store) {
	now := time.Now()
	var n atomic.Int64
	run := func(name string, op func(ctx context.Context, i int64) error) { parallel(b, name, &n, op) }
	spent := s.Spent("link", 1<<20)
	run("spend", func(ctx context.Context, i int64) error {
		var k [8]byte
		binary.BigEndian.PutUint64(k[:], uint64(i))
		return spent.Spend(ctx, sha256.Sum256(k[:]), now.Add(6*time.Minute), now)
	})
	budget := s.Limiter("kp-budget", shared.Rate{N: 1 << 30, Per: time.Hour}, 10000)
	run("take", func(ctx context.Context, i int64) error {
		_, _, err := budget.Take(ctx, fmt.Sprint("did:key:zBench", i%64), now)
		return err
	})
	ws := s.WakeSeconds()
	run("assign", func(ctx context.Context, i int64) error {
		_, err := ws.Assign(ctx, fmt.Sprint("did:key:zBench", i), int(i%60))
		return err
	})
}

// parallel runs op as the sub-benchmark name with 16 concurrent callers
// and reports its CPU per operation. Each call gets the next number of n,
// which goes on counting across the benchmark's rounds, so that a call
// that must use something new each time can.
func parallel(b *testing.B, name string, n *atomic.Int64, op func(ctx context.Context, i int64) error) {
	b.Run(name, func(b *testing.B) {
		b.SetParallelism(8) // 8 × GOMAXPROCS (2 here) = 16 callers
		b.ResetTimer()
		meter := benchcpu.Start(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := op(context.Background(), n.Add(1)); err != nil {
					b.Error(err)
					return
				}
			}
		})
		meter.Stop()
	})
}
