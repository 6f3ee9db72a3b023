package session

import (
	"bytes"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/benchcpu"
)

// BenchmarkLoad measures what every operation pays for keeping no group in
// memory: reading and restoring a pair session's state (checksum, decode,
// tree hash and key checks).
func BenchmarkLoad(b *testing.B) {
	alice, bob := newAgent(b, "alice", nil), newAgent(b, "bob", nil)
	group := pair(b, alice, bob)
	b.ReportAllocs()
	meter := benchcpu.Start(b)
	for b.Loop() {
		if err := bob.db.View(func(tx *bolt.Tx) error { _, err := bob.s.load(tx, group); return err }); err != nil {
			b.Fatal(err)
		}
	}
	meter.Stop()
}

// BenchmarkMessage1KiB measures a 1 KiB application message through the
// sessions of both members: encrypt and store at the sender, process and
// store at the receiver (bbolt without fsync, to show the CPU cost; the
// interop benchmark includes fsync).
func BenchmarkMessage1KiB(b *testing.B) {
	alice, bob := newAgent(b, "alice", nil), newAgent(b, "bob", nil)
	group := pair(b, alice, bob)
	data := bytes.Repeat([]byte{'x'}, 1024)
	b.ReportAllocs()
	meter := benchcpu.Start(b)
	for b.Loop() {
		var m []byte
		alice.update(func(tx *bolt.Tx) (err error) { m, err = alice.s.Encrypt(tx, group, data); return err })
		bob.update(func(tx *bolt.Tx) (err error) { _, err = bob.s.Process(tx, m, did.DID{}); return err })
	}
	meter.Stop()
}
