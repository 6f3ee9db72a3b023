package update_test

import (
	"context"
	"crypto/sha256"
	"testing"

	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/runtime/update"
)

// BenchmarkCheck measures the CPU of one update check on a device, side
// by side (docs/updates.md, "Sizing"):
//
//   - metadata: the TUF workflow alone (root, timestamp, snapshot,
//     targets from a fresh device directory, nothing newer to fetch);
//   - target-1MiB: the workflow and a 1 MiB target fetched, written,
//     synced and verified;
//   - sha256-1MiB: hashing the same 1 MiB alone, for reference.
func BenchmarkCheck(b *testing.B) {
	build := payload(2, 1<<20)
	b.Run("metadata", func(b *testing.B) { benchCheck(b, build, 2) })
	b.Run("target-1MiB", func(b *testing.B) { benchCheck(b, build, 1) })
	b.Run("sha256-1MiB", func(b *testing.B) {
		m := benchcpu.Start(b)
		for b.Loop() {
			sha256.Sum256(build)
		}
		m.Stop()
	})
}

func benchCheck(b *testing.B, build []byte, installed uint64) {
	r := newRepo(b)
	r.publish("agent", build, agentFor(2))
	m := benchcpu.Start(b)
	for b.Loop() {
		m.Pause()
		c := r.deviceIn(b.TempDir(), installed, func(cfg *update.Config) { cfg.Budget = 2 << 20 })
		m.Resume()
		res, err := c.Check(context.Background())
		if err != nil || (installed == 1 && res.Path == "") || (installed == 2 && !res.UpToDate) {
			b.Fatalf("check: %+v, %v", res, err)
		}
	}
	m.Stop()
}
