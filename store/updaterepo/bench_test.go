package updaterepo_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/torpor-dev/torpor/internal/benchcpu"
)

// BenchmarkDeviceReads measures, as CPU per operation (the embedded
// nats-server's included: it runs in the test process), what a device's
// reads cost the relay on each backend: a 64 KiB range (the size a
// device asks, docs/updates.md) of a 1 MiB blob, which a relay on
// JetStream holds in its cache of parts, and of a 16 MiB one, which it
// reads from NATS once for every two ranges; the timestamp; and the
// relay's refresh when nothing is due (each relay runs one a minute).
//
//	go test -run '^$' -bench BenchmarkDeviceReads -benchtime 2000x ./store/updaterepo
func BenchmarkDeviceReads(b *testing.B) {
	b.Run("bolt", func(b *testing.B) { benchBackend(b, boltOpener(b)) })
	b.Run("jetstream", func(b *testing.B) { benchBackend(b, jetstreamOpener(b)) })
}

func benchBackend(b *testing.B, open opener) {
	e := newEnv(b, open, 0)
	data := build(1<<20, 3)
	if err := e.publish("a", data, 2); err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
	big := build(16<<20, 4)
	if err := e.publish("b", big, 3); err != nil {
		b.Fatal(err)
	}
	sum = sha256.Sum256(big)
	bigSHA := hex.EncodeToString(sum[:])
	run := func(name string, op func(i int) error) {
		b.Run(name, func(b *testing.B) {
			meter := benchcpu.Start(b)
			for i := 0; i < b.N; i++ {
				if err := op(i); err != nil {
					b.Fatal(err)
				}
			}
			meter.Stop()
		})
	}
	run("range-64KiB", func(i int) error {
		_, err := e.repo.Blob(sha, int64(i%16)<<16, 64<<10)
		return err
	})
	run("range-64KiB-of-16MiB", func(i int) error {
		_, err := e.repo.Blob(bigSHA, int64(i%256)<<16, 64<<10)
		return err
	})
	run("timestamp", func(int) error {
		_, err := e.repo.Metadata("timestamp.json", 1<<20)
		return err
	})
	run("refresh-not-due", func(int) error {
		_, err := e.repo.Refresh()
		return err
	})
}
