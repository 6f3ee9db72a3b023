// Package replay is the device's replay cache of Governed Objects (draft-
// chapman-a2a-mls-03 Section 8.2) in bbolt: the (issuerDid, id) pairs the
// agent accepted, each kept until the object's effective expiry plus a
// margin.
//
// # Transactions and durability
//
// An id counts as admitted only once the transaction that admitted it
// committed; bbolt commits with fsync, so an admitted id survives a crash
// or a power cut, and an id whose transaction did not commit was never
// admitted (its object was not acted on either, because the agent acts only
// after the commit). Cache.Tx binds the cache to the caller's read-write
// *bbolt.Tx: the agent commits MLS state, replay entries and ledger
// reservations for a drained batch in one transaction. TxCache implements
// governed.ReplayCache. Cache.Admit and Cache.Seen open their own
// transactions for callers with none.
//
// The reference keeps its cache in memory and snapshots it every 60 s, so a
// crash forgets up to a minute of admissions; here there is no such window.
//
// # Layout
//
// Bucket "replay" maps issuerDid ‖ 0x00 ‖ SHA-256(id) to the retain-until
// instant (Unix nanoseconds, big-endian). Hashing the id bounds the key size
// whatever the sender puts in id (a did:key never contains 0x00, so the key
// is unambiguous). Bucket "replay-exp" indexes the same entries by
// retain-until ‖ key, so that sweeping expired entries and evicting the
// soonest-expiring one read from the front of a cursor. Bucket "replay-meta"
// holds the entry count.
//
// # Bounds
//
// Retention is expiry + Options.Margin (5 minutes, for clock skew between
// the sender and this device). Entries past their retention are swept: a
// few on every admission and all of them by Sweep (which the agent runs on
// each wake). At Options.MaxEntries (100 000) the soonest-expiring entry is
// evicted to make room, as the reference does; an evicted id whose object
// has not yet expired could be replayed, so MaxEntries must exceed the
// number of objects the device accepts within one maximum object lifetime.
// Evictions are counted (Stats) so an operator sees when that happens.
package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/store"
)

var (
	bucketIDs  = []byte("replay")
	bucketExp  = []byte("replay-exp")
	bucketMeta = []byte("replay-meta")
	keyCount   = []byte("count")
	keyEvicted = []byte("evicted")
)

const (
	// DefaultMargin is added to an object's expiry when Options.Margin is
	// zero.
	DefaultMargin = 5 * time.Minute
	// DefaultMaxEntries bounds the cache when Options.MaxEntries is zero.
	DefaultMaxEntries = 100_000
	// sweepPerAdmit is how many expired entries an admission removes.
	sweepPerAdmit = 8
)

// ErrReadOnly is returned (wrapped) by TxCache.Admit in a read-only
// transaction.
var ErrReadOnly = errors.New("replay: admission needs a read-write transaction")

// Options configure a Cache. The zero value is ready to use.
type Options struct {
	// Margin is added to each object's expiry; zero means DefaultMargin.
	Margin time.Duration
	// MaxEntries bounds the number of entries; zero means
	// DefaultMaxEntries.
	MaxEntries int
	// Clock tells the time for sweeping; nil means clock.Real.
	Clock clock.Clock
}

// Cache is the replay cache in one bbolt database.
type Cache struct {
	db     *bolt.DB
	margin time.Duration
	max    int
	clock  clock.Clock
}

// Open creates the cache's buckets in db if needed and returns the cache.
func Open(db *bolt.DB, o *Options) (*Cache, error) {
	if o == nil {
		o = &Options{}
	}
	c := &Cache{db: db, margin: o.Margin, max: o.MaxEntries, clock: clock.Or(o.Clock)}
	if c.margin == 0 {
		c.margin = DefaultMargin
	}
	if c.max <= 0 {
		c.max = DefaultMaxEntries
	}
	err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketIDs, bucketExp, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("replay: %w", store.Err(err))
	}
	return c, nil
}

// TxCache is a Cache bound to one transaction.
type TxCache struct {
	c  *Cache
	tx *bolt.Tx
}

// Tx binds the cache to tx. Admissions through it commit or roll back with
// tx. The cache's buckets must exist (Open creates them).
func (c *Cache) Tx(tx *bolt.Tx) *TxCache { return &TxCache{c: c, tx: tx} }

// Seen implements governed.ReplayCache: it reports whether (issuer, id) is
// retained at now. Admissions earlier in the same transaction are seen.
func (t *TxCache) Seen(issuer, id string, now time.Time) (bool, error) {
	ids := t.tx.Bucket(bucketIDs)
	if ids == nil {
		return false, errors.New("replay: buckets missing; use Open")
	}
	v := ids.Get(entryKey(issuer, id))
	return v != nil && decodeTime(v) > nanos(now), nil
}

// Admit implements governed.ReplayCache: it records (issuer, id) until
// expiry plus the margin, keeping the later retention when the pair is
// already present. It sweeps a few expired entries and, when the cache is
// full, evicts the soonest-expiring ones. It returns an error wrapping
// ErrReadOnly in a read-only transaction, and store.ErrFull when the file
// cannot grow.
func (t *TxCache) Admit(issuer, id string, expiry time.Time) error {
	if !t.tx.Writable() {
		return ErrReadOnly
	}
	b, err := t.buckets()
	if err != nil {
		return err
	}
	until := nanos(expiry.Add(t.c.margin))
	key := entryKey(issuer, id)
	n := b.count()
	if old := b.ids.Get(key); old != nil {
		if decodeTime(old) >= until {
			return nil
		}
		if err := b.exp.Delete(expKey(decodeTime(old), key)); err != nil {
			return store.Err(err)
		}
		n--
	}
	if err := b.put(key, until); err != nil {
		return err
	}
	n++
	removed, err := b.sweep(nanos(t.c.clock.Now()), sweepPerAdmit)
	if err != nil {
		return err
	}
	n -= removed
	for n > t.c.max {
		if err := b.evictFirst(); err != nil {
			return err
		}
		n--
	}
	return b.setCount(n)
}

// Sweep removes every entry whose retention ended, in tx, and returns how
// many it removed.
func (t *TxCache) Sweep() (int, error) {
	if !t.tx.Writable() {
		return 0, ErrReadOnly
	}
	b, err := t.buckets()
	if err != nil {
		return 0, err
	}
	removed, err := b.sweep(nanos(t.c.clock.Now()), math.MaxInt)
	if err != nil {
		return 0, err
	}
	return removed, b.setCount(b.count() - removed)
}

// Admit records (issuer, id) in a transaction of its own; see TxCache.Admit.
// The pair is admitted when Admit returns nil.
func (c *Cache) Admit(issuer, id string, expiry time.Time) error {
	return store.Err(c.db.Update(func(tx *bolt.Tx) error { return c.Tx(tx).Admit(issuer, id, expiry) }))
}

// Seen reports whether (issuer, id) is retained now.
func (c *Cache) Seen(issuer, id string) (seen bool, err error) {
	err = c.db.View(func(tx *bolt.Tx) error {
		seen, err = c.Tx(tx).Seen(issuer, id, c.clock.Now())
		return err
	})
	return seen, err
}

// Sweep removes every expired entry in a transaction of its own.
func (c *Cache) Sweep() (n int, err error) {
	err = c.db.Update(func(tx *bolt.Tx) error {
		n, err = c.Tx(tx).Sweep()
		return err
	})
	return n, store.Err(err)
}

// Stats are the cache's counters.
type Stats struct {
	Entries int    // entries stored, including expired ones not yet swept
	Evicted uint64 // entries evicted before their retention ended, ever
}

// Stats returns the cache's counters.
func (c *Cache) Stats() (s Stats, err error) {
	err = c.db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if m == nil {
			return errors.New("replay: buckets missing; use Open")
		}
		s.Entries = int(store.Uint(m, keyCount))
		s.Evicted = store.Uint(m, keyEvicted)
		return nil
	})
	return s, err
}

// buckets is the cache's buckets in one transaction.
type buckets struct{ ids, exp, meta *bolt.Bucket }

func (t *TxCache) buckets() (buckets, error) {
	b := buckets{t.tx.Bucket(bucketIDs), t.tx.Bucket(bucketExp), t.tx.Bucket(bucketMeta)}
	if b.ids == nil || b.exp == nil || b.meta == nil {
		return b, errors.New("replay: buckets missing; use Open")
	}
	return b, nil
}

func (b buckets) count() int { return int(store.Uint(b.meta, keyCount)) }

func (b buckets) setCount(n int) error { return store.Err(store.PutUint(b.meta, keyCount, uint64(n))) }

func (b buckets) put(key []byte, until int64) error {
	if err := b.ids.Put(key, encodeTime(until)); err != nil {
		return store.Err(err)
	}
	return store.Err(b.exp.Put(expKey(until, key), nil))
}

// sweep deletes up to limit entries whose retention ended at or before
// now, from the front of the expiry index, and returns how many.
func (b buckets) sweep(now int64, limit int) (int, error) {
	n := 0
	c := b.exp.Cursor()
	for k, _ := c.First(); k != nil && n < limit && decodeTime(k[:8]) <= now; k, _ = c.First() {
		if err := b.remove(k); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// evictFirst removes the soonest-expiring entry and counts the eviction.
func (b buckets) evictFirst() error {
	k, _ := b.exp.Cursor().First()
	if k == nil {
		return errors.New("replay: count and index disagree")
	}
	if err := b.remove(k); err != nil {
		return err
	}
	return store.Err(store.PutUint(b.meta, keyEvicted, store.Uint(b.meta, keyEvicted)+1))
}

func (b buckets) remove(expk []byte) error {
	key := bytes.Clone(expk[8:])
	if err := b.exp.Delete(expk); err != nil {
		return store.Err(err)
	}
	return store.Err(b.ids.Delete(key))
}

// entryKey is issuer ‖ 0x00 ‖ SHA-256(id).
func entryKey(issuer, id string) []byte {
	h := sha256.Sum256([]byte(id))
	k := make([]byte, 0, len(issuer)+1+len(h))
	k = append(k, issuer...)
	k = append(k, 0)
	return append(k, h[:]...)
}

func expKey(until int64, key []byte) []byte {
	return append(encodeTime(until), key...)
}

// maxTime is the last instant UnixNano represents.
var maxTime = time.Unix(0, math.MaxInt64)

func nanos(t time.Time) int64 {
	if t.After(maxTime) {
		return math.MaxInt64
	}
	if t.Before(time.Unix(0, 0)) {
		return 0
	}
	return t.UnixNano()
}

// encodeTime writes a non-negative instant big-endian, so byte order is time
// order.
func encodeTime(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

func decodeTime(b []byte) int64 {
	if len(b) < 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}
