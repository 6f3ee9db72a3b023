package drain

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketDeferred counts, per deferred record, how many drains have
// deferred it, in agent.db so that the count outlives a restart. A value
// is the count (8 bytes) and when the record was first deferred (Unix
// seconds, 8 bytes), both big-endian.
var bucketDeferred = []byte("drain-deferred")

// DefaultMaxDeferrals is Config.MaxDeferrals when that is zero: a record
// deferred at this many drains (one per wake: the wake's cursor moves past
// it) and unlocked by none of the records after it is dropped.
const DefaultMaxDeferrals = 3

// maxDeferredAge is how long a deferral count is kept for a record that
// is never seen again (its TTL ended at the relay, another drain took
// it): past an object's longest lifetime (governed's 30 days).
const maxDeferredAge = 31 * 24 * time.Hour

// CauseMLSUndeliverable: an MLS message deferred at Config.MaxDeferrals
// drains (a group this agent never joined, an epoch it never reached) that
// no later record unlocked; it is acknowledged, so the relay deletes it,
// and reported.
const CauseMLSUndeliverable = "mls-undeliverable"

// deferralKey names record r: its seq and a digest of its sender and
// body, so that a record of another relay (or of a relay reset) with the
// same seq is another record.
func deferralKey(r Record) []byte {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%s\x00", len(r.From), r.From)
	h.Write(r.Body)
	return h.Sum(binary.BigEndian.AppendUint64(nil, r.Seq))[:8+16]
}

// deferral counts one more drain that defers r and reports whether r is
// to be dropped: deferred at max drains. A record drained live (seq 0,
// never queued) is not counted.
func deferral(tx *bolt.Tx, r Record, max int, now time.Time) (drop bool, n uint64, err error) {
	if r.Seq == 0 {
		return false, 0, nil
	}
	b := tx.Bucket(bucketDeferred)
	k := deferralKey(r)
	first := now.Unix()
	if v := b.Get(k); len(v) == 16 {
		n, first = binary.BigEndian.Uint64(v), int64(binary.BigEndian.Uint64(v[8:]))
	}
	n++
	if n >= uint64(max) {
		return true, n, b.Delete(k)
	}
	v := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, n), uint64(first))
	return false, n, b.Put(k, v)
}

// settled forgets r's deferral count, if any: r was processed or refused.
func settled(tx *bolt.Tx, r Record) error {
	if r.Seq == 0 {
		return nil
	}
	b := tx.Bucket(bucketDeferred)
	k := deferralKey(r)
	if b.Get(k) == nil {
		return nil
	}
	return b.Delete(k)
}

// pruneDeferred forgets the counts of records first deferred more than
// maxDeferredAge before now.
func pruneDeferred(tx *bolt.Tx, now time.Time) error {
	b := tx.Bucket(bucketDeferred)
	var old [][]byte
	b.ForEach(func(k, v []byte) error {
		if len(v) != 16 || now.Sub(time.Unix(int64(binary.BigEndian.Uint64(v[8:])), 0)) > maxDeferredAge {
			old = append(old, k)
		}
		return nil
	})
	for _, k := range old {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
