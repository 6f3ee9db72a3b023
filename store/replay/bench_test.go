package replay

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/internal/benchcpu"
)

// BenchmarkAdmit compares, in one run, an admission in a transaction of its
// own (one fsync each, what Cache.Admit does) with admissions batched 100
// to a transaction (what the agent does for a drained batch). ns/op is per
// admission in both.
func BenchmarkAdmit(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			db, c := mustOpen(b, filepath.Join(b.TempDir(), "agent.db"), &Options{Clock: clocktest.New(t0)})
			defer db.Close()
			b.ResetTimer()
			meter := benchcpu.Start(b)
			for i := 0; i < b.N; i += batch {
				err := db.Update(func(tx *bolt.Tx) error {
					for j := i; j < i+batch && j < b.N; j++ {
						if err := c.Tx(tx).Admit(alice, fmt.Sprint(j), t0.Add(time.Hour)); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			meter.Stop()
		})
	}
}
