package queue

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

var t0 = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

const (
	alice = "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"
	bob   = "did:key:z6MknGc3ocHs3zdPiJbnaaqDi58NGb4pk1Sp9WxWufuXSdxf"
	agent = "did:key:z6MkAgentAgentAgentAgentAgentAgentAgentAgentAge"
)

// mustOpen opens a queue in a fresh directory and closes it at cleanup.
func mustOpen(t testing.TB) (*Bolt, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "queue.db")
	s, err := OpenBolt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func msg(from string, body string) Record {
	return Record{Agent: agent, From: from, Body: []byte(body)}
}

func mustEnqueue(t testing.TB, s Store, r Record, b queuebounds.Bounds, now time.Time) Record {
	t.Helper()
	out, err := s.Enqueue(context.Background(), r, b, now)
	if err != nil {
		t.Fatalf("Enqueue(%s, %d bytes) = %v", r.From, len(r.Body), err)
	}
	return out
}

// dump returns every key and value of the queue's buckets, for comparing
// the file before and after an operation that must not change it.
func dump(t testing.TB, s *Bolt) string {
	t.Helper()
	var buf bytes.Buffer
	err := s.db.View(func(tx *bolt.Tx) error {
		var walk func(prefix string, b *bolt.Bucket) error
		walk = func(prefix string, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if v == nil {
					if nb := b.Bucket(k); nb != nil {
						fmt.Fprintf(&buf, "%s%q/\n", prefix, k)
						return walk(prefix+"  ", nb)
					}
				}
				fmt.Fprintf(&buf, "%s%q=%x\n", prefix, k, v)
				return nil
			})
		}
		for _, name := range [][]byte{bucketMeta, bucketAgents, bucketExpiry} {
			fmt.Fprintf(&buf, "%s/\n", name)
			if err := walk("  ", tx.Bucket(name)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// checkConsistent recomputes every agent's counters and peer counts from
// its records and checks them, and that the expiry index and the records
// match one to one.
func checkConsistent(t testing.TB, s *Bolt) {
	t.Helper()
	err := s.db.View(func(tx *bolt.Tx) error {
		index := map[string]bool{}
		if err := tx.Bucket(bucketExpiry).ForEach(func(k, _ []byte) error {
			index[string(k)] = true
			return nil
		}); err != nil {
			return err
		}
		err := tx.Bucket(bucketAgents).ForEach(func(name, _ []byte) error {
			return checkAgent(tx.Bucket(bucketAgents).Bucket(name), string(name), index)
		})
		if err != nil {
			return err
		}
		if len(index) != 0 {
			return fmt.Errorf("%d expiry index entries without a record", len(index))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("store inconsistent: %v", err)
	}
}

// checkAgent checks agent a's counters and peer counts against its records
// in ab, and crosses off each record's entry in the expiry index.
func checkAgent(ab *bolt.Bucket, a string, index map[string]bool) error {
	got, err := parseCounters(a, ab.Get(keyCounters))
	if err != nil {
		return err
	}
	want := counters{last: got.last}
	peers := map[string]peerCount{}
	if recs := ab.Bucket(bucketRecords); recs != nil {
		if err := recs.ForEach(func(k, v []byte) error {
			seq := binary.BigEndian.Uint64(k)
			r, err := decodeRecord(a, seq, v)
			if err != nil {
				return err
			}
			if seq > got.last {
				return fmt.Errorf("%s/%d beyond last seq %d", a, seq, got.last)
			}
			want.add(r, +1)
			if r.From != "" {
				p := peers[r.From]
				p.n++
				p.bytes += uint64(len(r.Body))
				peers[r.From] = p
			}
			ek := string(expiryKey(r.ExpiresAt, seq, a))
			if !index[ek] {
				return fmt.Errorf("%s/%d has no expiry index entry", a, seq)
			}
			delete(index, ek)
			return nil
		}); err != nil {
			return err
		}
	}
	if got != want {
		return fmt.Errorf("counters of %s = %+v, records say %+v", a, got, want)
	}
	stored := map[string]peerCount{}
	if pb := ab.Bucket(bucketPeers); pb != nil {
		pb.ForEach(func(k, v []byte) error { stored[string(k)] = getPeer(v); return nil })
	}
	if fmt.Sprint(stored) != fmt.Sprint(peers) {
		return fmt.Errorf("peer counts of %s = %v, records say %v", a, stored, peers)
	}
	return nil
}

type boltTx = bolt.Tx
