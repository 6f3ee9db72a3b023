package queue

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/queue/internal/groupcommit"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// Bucket and key names (see the package doc's on-disk layout).
var (
	bucketMeta    = []byte("meta")
	bucketAgents  = []byte("agents")
	bucketExpiry  = []byte("expiry")
	keyVersion    = []byte("version")
	keyCounters   = []byte("c")
	bucketRecords = []byte("r")
	bucketPeers   = []byte("p")
)

// Options configure OpenBolt. The zero value is ready to use.
type Options struct {
	// Store is passed to store.Open (size cap, lock timeout).
	Store *store.Options
	// MaxBatchSize caps the Enqueue and Ack calls that share one commit.
	// Zero means no cap: a commit takes every call that arrived during the
	// previous one.
	MaxBatchSize int
}

// Bolt is the embedded bbolt Store. It is safe for concurrent use.
//
// Bolt implements Store.
type Bolt struct {
	db    *bolt.DB
	ownDB bool
	// commits group-commits Enqueue and Ack.
	commits *groupcommit.Group[boltWrite]
	// removed watches the file for its removal while open.
	removed *removal
	// fail, when set by tests, is called at named points inside write
	// transactions with the record being written or removed; an error
	// aborts the transaction there.
	fail func(point string, r Record) error

	mu sync.RWMutex
	// mu guards all following fields. Operations hold it for reading, so
	// Close waits for them.
	closed bool
}

var _ Store = (*Bolt)(nil)

// OpenBolt opens (creating if needed) the queue file at path with
// store.Open. Close closes the file.
func OpenBolt(path string, o *Options) (*Bolt, error) {
	if o == nil {
		o = &Options{}
	}
	db, err := store.Open(path, o.Store)
	if err != nil {
		return nil, err
	}
	s, err := newBolt(db, true)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.commits.Max = o.MaxBatchSize
	return s, nil
}

// New returns a Store kept in db, which the caller opened (for instance to
// keep other relay state in the same file) and closes after Close. It
// creates the queue's buckets if needed. Enqueue and Ack group-commit among
// themselves (see the package doc); other writers of db commit on their own.
func New(db *bolt.DB) (*Bolt, error) { return newBolt(db, false) }

func newBolt(db *bolt.DB, own bool) (*Bolt, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		if err := setLayout(tx); err != nil {
			return err
		}
		for _, name := range [][]byte{bucketAgents, bucketExpiry} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queue: opening %s: %w", db.Path(), store.Err(err))
	}
	rm, err := watchRemoval(db.Path())
	if err != nil {
		return nil, fmt.Errorf("queue: opening %s: %w", db.Path(), err)
	}
	return &Bolt{db: db, ownDB: own, commits: newBoltCommits(db, rm), removed: rm}, nil
}

// DB returns the underlying database, for state that must live in the same
// file. Callers must not touch the queue's buckets.
func (s *Bolt) DB() *bolt.DB { return s.db }

// Close implements Store. It waits for calls in progress.
func (s *Bolt) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	s.removed.close()
	if s.ownDB {
		return s.db.Close()
	}
	return nil
}

// enter takes the read lock for one call; it fails after Close or when ctx
// is done. The caller must call s.mu.RUnlock when it returns nil.
func (s *Bolt) enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

// write runs fn in a committed (fsync'd) read-write transaction, shared
// with concurrent writers (see newBoltCommits). fn may run more than once and
// must be idempotent.
func (s *Bolt) write(fn func(*bolt.Tx) error) error { return s.commits.Do(fn) }

// view runs fn in a read transaction; a page that makes bbolt panic or
// fault is a *store.CorruptError, not the end of the relay.
func (s *Bolt) view(fn func(*bolt.Tx) error) error {
	if err := s.removed.readable(); err != nil {
		return err
	}
	err, cerr := guarded(s.db, func() error { return s.db.View(fn) })
	if cerr != nil {
		return cerr
	}
	return err
}

// failpoint returns the injected failure for point, if any.
func (s *Bolt) failpoint(point string, r Record) error {
	if s.fail == nil {
		return nil
	}
	return s.fail(point, r)
}

// Enqueue implements Store.
func (s *Bolt) Enqueue(ctx context.Context, r Record, b queuebounds.Bounds, now time.Time) (Record, error) {
	if err := s.enter(ctx); err != nil {
		return Record{}, err
	}
	defer s.mu.RUnlock()
	r, val, err := prepare(r, b, now)
	if err != nil {
		return Record{}, err
	}
	var (
		out     Record
		refused *FullError
	)
	err = s.write(func(tx *bolt.Tx) error {
		out, refused = Record{}, nil // Batch may re-run this function
		if _, err := s.purge(tx, now); err != nil {
			return err
		}
		seq, fe, err := s.insert(tx, r, val, b)
		if err != nil || fe != nil {
			refused = fe
			return err
		}
		out = r
		out.Seq = seq
		return nil
	})
	switch {
	case err != nil:
		return Record{}, fmt.Errorf("queue: enqueue for %s: %w", r.Agent, err)
	case refused != nil:
		return Record{}, refused
	}
	return out, nil
}

// prepare validates an Enqueue call and returns the record with its times
// set and its stored form.
func prepare(r Record, b queuebounds.Bounds, now time.Time) (Record, []byte, error) {
	r, err := prepareRecord(r, b, now)
	if err != nil {
		return Record{}, nil, err
	}
	val, err := encodeUnsealed(r)
	return r, val, err
}

// insert checks b against the agent's live records and writes r, its
// expiry index entry and the counters. It returns a *FullError, writing
// nothing, when a bound refuses r. Expired records must have been purged.
func (s *Bolt) insert(tx *bolt.Tx, r Record, val []byte, b queuebounds.Bounds) (uint64, *FullError, error) {
	agents := tx.Bucket(bucketAgents)
	var (
		c        counters
		fromPeer peerCount
	)
	if ab := agents.Bucket([]byte(r.Agent)); ab != nil {
		var err error
		if c, err = parseCounters(r.Agent, ab.Get(keyCounters)); err != nil {
			return 0, nil, err
		}
		if p := ab.Bucket(bucketPeers); p != nil && r.From != "" {
			fromPeer = getPeer(p.Get([]byte(r.From)))
		}
	}
	if fe := check(c, fromPeer, r, b); fe != nil {
		return 0, fe, nil // a refusal writes nothing
	}
	ab, err := agents.CreateBucketIfNotExists([]byte(r.Agent))
	if err != nil {
		return 0, nil, err
	}
	recs, err := ab.CreateBucketIfNotExists(bucketRecords)
	if err != nil {
		return 0, nil, err
	}
	peers, err := ab.CreateBucketIfNotExists(bucketPeers)
	if err != nil {
		return 0, nil, err
	}
	// Seqs only grow, so records are appended: full pages, not the half
	// full ones a split at bbolt's default fill leaves behind.
	recs.FillPercent = 1
	c.last++
	c.add(r, +1)
	sealRecord(val, r.Agent, c.last) // Batch may re-run this with another seq: val is rewritten whole
	steps := []func() error{
		func() error { return recs.Put(seqKey(c.last), val) },
		func() error { return s.failpoint("enqueue:after-record", r) },
		func() error { return tx.Bucket(bucketExpiry).Put(expiryKey(r.ExpiresAt, c.last, r.Agent), nil) },
		func() error { return s.failpoint("enqueue:after-index", r) },
		func() error { return addPeer(peers, r, +1) },
		func() error { return s.failpoint("enqueue:after-peer", r) },
		func() error { return ab.Put(keyCounters, c.marshal()) },
		func() error { return s.failpoint("enqueue:after-counters", r) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return 0, nil, err
		}
	}
	return c.last, nil, nil
}

// getPeer parses a peer value: uint64 BE records, uint64 BE body bytes.
func getPeer(b []byte) peerCount {
	if len(b) != peerValueLen {
		return peerCount{}
	}
	return peerCount{n: binary.BigEndian.Uint64(b), bytes: binary.BigEndian.Uint64(b[8:])}
}

const peerValueLen = 16

func (p peerCount) marshal() []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, peerValueLen), p.n), p.bytes)
}

// addPeer adds r (sign +1) to or removes it (sign -1) from the count of
// records from r.From, deleting the key at zero. An empty peer is not
// counted.
func addPeer(peers *bolt.Bucket, r Record, sign int) error {
	if r.From == "" {
		return nil
	}
	p := getPeer(peers.Get([]byte(r.From)))
	n, size := uint64(1), uint64(len(r.Body))
	if sign < 0 {
		n, size = -n, -size // two's complement subtraction
	}
	p.n += n
	p.bytes += size
	if p.n == 0 || int64(p.n) < 0 {
		return peers.Delete([]byte(r.From))
	}
	return peers.Put([]byte(r.From), p.marshal())
}

// remove deletes record seq of agent (bucket ab) with its index entry and
// takes it out of the counters. It reports false if there is no such
// record.
func (s *Bolt) remove(tx *bolt.Tx, ab *bolt.Bucket, agent string, seq uint64) (bool, error) {
	recs := ab.Bucket(bucketRecords)
	if recs == nil {
		return false, nil
	}
	v := recs.Get(seqKey(seq))
	if v == nil {
		return false, nil
	}
	r, err := decodeRecord(agent, seq, v)
	if err != nil && !errors.Is(err, errChecksum) { // a damaged record can still be deleted
		return false, err
	}
	c, err := parseCounters(agent, ab.Get(keyCounters))
	if err != nil {
		return false, err
	}
	c.add(r, -1)
	steps := []func() error{
		func() error { return recs.Delete(seqKey(seq)) },
		func() error { return s.failpoint("remove:after-record", r) },
		func() error { return tx.Bucket(bucketExpiry).Delete(expiryKey(r.ExpiresAt, seq, agent)) },
		func() error { return addPeer(ab.Bucket(bucketPeers), r, -1) },
		func() error { return ab.Put(keyCounters, c.marshal()) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return false, err
		}
	}
	return true, nil
}

// purge deletes every record expired at now (expiry < now), walking the
// expiry index from its oldest entry, and returns how many.
func (s *Bolt) purge(tx *bolt.Tx, now time.Time) (int, error) {
	var due [][]byte
	c := tx.Bucket(bucketExpiry).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		exp, _, _, err := parseExpiryKey(k)
		if err != nil {
			return 0, err
		}
		if !now.After(exp) {
			break
		}
		due = append(due, bytes.Clone(k))
	}
	agents := tx.Bucket(bucketAgents)
	for _, k := range due {
		_, seq, agent, _ := parseExpiryKey(k)
		ab := agents.Bucket([]byte(agent))
		if ab == nil {
			return 0, fmt.Errorf("%w: expiry index names unknown agent %q", ErrCorrupt, agent)
		}
		ok, err := s.remove(tx, ab, agent, seq)
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, fmt.Errorf("%w: expiry index names missing record %s/%d", ErrCorrupt, agent, seq)
		}
	}
	return len(due), nil
}

// Next implements Store. A record that fails its checksum or cannot be
// decoded is left out and named in a *DamagedError returned with the
// sound records; it does not count against max.
func (s *Bolt) Next(ctx context.Context, agent string, after uint64, max int, now time.Time) ([]Record, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	if max <= 0 || after == ^uint64(0) {
		return nil, nil
	}
	var (
		out     []Record
		damaged *DamagedError
	)
	err := s.view(func(tx *bolt.Tx) error {
		ab := tx.Bucket(bucketAgents).Bucket([]byte(agent))
		if ab == nil || ab.Bucket(bucketRecords) == nil {
			return nil
		}
		c := ab.Bucket(bucketRecords).Cursor()
		for k, v := c.Seek(seqKey(after + 1)); k != nil && len(out) < max; k, v = c.Next() {
			r, err := decodeRecord(agent, binary.BigEndian.Uint64(k), v)
			switch {
			case err != nil:
				if damaged == nil {
					damaged = &DamagedError{Agent: agent, First: err}
				}
				damaged.Seqs = append(damaged.Seqs, binary.BigEndian.Uint64(k))
			case !r.Expired(now):
				out = append(out, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queue: next for %s: %w", agent, err)
	}
	if damaged != nil {
		return out, damaged
	}
	return out, nil
}

// Ack implements Store. The deletions are durable when it returns.
func (s *Bolt) Ack(ctx context.Context, agent string, seqs []uint64) error {
	_, err := s.AckCount(ctx, agent, seqs)
	return err
}

// AckCount implements AckCounter.
func (s *Bolt) AckCount(ctx context.Context, agent string, seqs []uint64) (int, error) {
	if err := s.enter(ctx); err != nil {
		return 0, err
	}
	defer s.mu.RUnlock()
	if len(seqs) == 0 {
		return 0, nil
	}
	var deleted int
	err := s.write(func(tx *bolt.Tx) error {
		deleted = 0 // Batch may re-run this function
		ab := tx.Bucket(bucketAgents).Bucket([]byte(agent))
		if ab == nil {
			return nil
		}
		for _, seq := range seqs {
			ok, err := s.remove(tx, ab, agent, seq)
			if err != nil {
				return err
			}
			if ok {
				deleted++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("queue: ack for %s: %w", agent, err)
	}
	return deleted, nil
}

// Purge implements Store.
func (s *Bolt) Purge(ctx context.Context, now time.Time) (int, error) {
	if err := s.enter(ctx); err != nil {
		return 0, err
	}
	defer s.mu.RUnlock()
	var n int
	err := s.write(func(tx *bolt.Tx) error {
		var err error
		n, err = s.purge(tx, now) // sets n again if the batch is re-run
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("queue: purge: %w", store.Err(err))
	}
	return n, nil
}

// Stats implements Store. It does not write: records that expired since
// the last purge are subtracted from the counters.
func (s *Bolt) Stats(ctx context.Context, agent string, now time.Time) (Stats, error) {
	if err := s.enter(ctx); err != nil {
		return Stats{}, err
	}
	defer s.mu.RUnlock()
	var c counters
	err := s.view(func(tx *bolt.Tx) error {
		ab := tx.Bucket(bucketAgents).Bucket([]byte(agent))
		if ab == nil {
			return nil
		}
		var err error
		if c, err = parseCounters(agent, ab.Get(keyCounters)); err != nil {
			return err
		}
		return subtractExpired(tx, ab, agent, now, &c)
	})
	if err != nil {
		return Stats{}, fmt.Errorf("queue: stats for %s: %w", agent, err)
	}
	return Stats{
		Messages:       int(c.n),
		Bytes:          int64(c.bytes),
		Handshakes:     int(c.hn),
		HandshakeBytes: int64(c.hbytes),
	}, nil
}

// subtractExpired takes agent's records that are expired at now but not yet
// purged out of c.
func subtractExpired(tx *bolt.Tx, ab *bolt.Bucket, agent string, now time.Time, c *counters) error {
	recs := ab.Bucket(bucketRecords)
	cur := tx.Bucket(bucketExpiry).Cursor()
	for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
		exp, seq, a, err := parseExpiryKey(k)
		if err != nil {
			return err
		}
		if !now.After(exp) {
			break
		}
		if a != agent || recs == nil {
			continue
		}
		v := recs.Get(seqKey(seq))
		if v == nil {
			return fmt.Errorf("%w: expiry index names missing record %s/%d", ErrCorrupt, agent, seq)
		}
		r, err := decodeRecord(agent, seq, v)
		if err != nil && !errors.Is(err, errChecksum) {
			return err
		}
		c.add(r, -1)
	}
	return nil
}
