package store_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/store"
)

// BenchmarkOpenCheck opens a store of 16 MiB (an agent's, after a
// long life) with and without Options.Check, side by side in each
// iteration, and reports both times and their ratio: what the agent's
// check at start costs.
func BenchmarkOpenCheck(b *testing.B) {
	path := filepath.Join(b.TempDir(), "agent.db")
	db, err := store.Open(path, &store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 16 {
		err := db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucket([]byte(fmt.Sprint("bucket", i)))
			if err != nil {
				return err
			}
			for j := range 1000 {
				if err := bk.Put([]byte(fmt.Sprintf("key%06d", j)), make([]byte, 400)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	db.Close()
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	var plain, checked time.Duration
	meter := benchcpu.Start(b)
	for b.Loop() {
		for _, check := range []bool{false, true} {
			t := time.Now()
			db, err := store.Open(path, &store.Options{Check: check})
			if err != nil {
				b.Fatal(err)
			}
			db.Close()
			if check {
				checked += time.Since(t)
			} else {
				plain += time.Since(t)
			}
		}
	}
	meter.Stop()
	b.ReportMetric(float64(plain.Microseconds())/float64(b.N), "plain-µs/op")
	b.ReportMetric(float64(checked.Microseconds())/float64(b.N), "checked-µs/op")
	b.ReportMetric(float64(checked)/float64(plain), "checked/plain")
	b.ReportMetric(float64(fi.Size())/(1<<20), "MiB")
}
