package mqttsession

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/eclipse/paho.golang/autopaho/queue"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store"
)

var (
	subItems = []byte("items")
	subMeta  = []byte("meta")
	keyCount = []byte("count")
	keyBytes = []byte("bytes")
)

// Default bounds of a Queue.
const (
	DefaultMaxItems = 10_000
	DefaultMaxBytes = 16 << 20
)

// QueueOptions configure OpenQueue. The zero value is ready to use.
type QueueOptions struct {
	// MaxItems bounds the number of queued messages; zero means
	// DefaultMaxItems.
	MaxItems int
	// MaxBytes bounds the queued bytes; zero means DefaultMaxBytes.
	MaxBytes int64
}

// Queue is an MQTT client's outbound queue in a bbolt bucket. It
// implements queue.Queue. Enqueue and EnqueueTx are safe for concurrent
// use; Peek and its Entry are for one consumer (transport/mqtt/mqttconn),
// as queue.Queue documents.
type Queue struct {
	db       *bolt.DB
	bucket   []byte
	maxItems int
	maxBytes int64

	mu sync.Mutex
	// mu guards all following fields.
	waiting []chan struct{} // closed when an item is queued
	empty   []chan struct{} // closed when the queue becomes empty
}

var _ queue.Queue = (*Queue)(nil)

// OpenQueue creates the bucket name in db if needed and returns the queue
// kept there. Items queued before a restart are still there, in order.
func OpenQueue(db *bolt.DB, name string, o *QueueOptions) (*Queue, error) {
	if name == "" {
		return nil, errors.New("mqttsession: empty bucket name")
	}
	if o == nil {
		o = &QueueOptions{}
	}
	q := &Queue{db: db, bucket: []byte(name), maxItems: o.MaxItems, maxBytes: o.MaxBytes}
	if q.maxItems <= 0 {
		q.maxItems = DefaultMaxItems
	}
	if q.maxBytes <= 0 {
		q.maxBytes = DefaultMaxBytes
	}
	if err := createBuckets(db, q.bucket, subItems, subMeta, subBad); err != nil {
		return nil, fmt.Errorf("mqttsession: opening queue %q: %w", name, err)
	}
	return q, nil
}

// qbuckets is a queue's sub-buckets in one transaction.
type qbuckets struct{ items, meta, bad *bolt.Bucket }

func (q *Queue) buckets(tx *bolt.Tx) (qbuckets, error) {
	top := tx.Bucket(q.bucket)
	if top == nil {
		return qbuckets{}, fmt.Errorf("mqttsession: bucket %q missing (use OpenQueue)", q.bucket)
	}
	return qbuckets{top.Bucket(subItems), top.Bucket(subMeta), top.Bucket(subBad)}, nil
}

func (b qbuckets) count() (int, int64) {
	return int(store.Uint(b.meta, keyCount)), int64(store.Uint(b.meta, keyBytes))
}

func (b qbuckets) setCount(n int, size int64) error {
	if err := store.PutUint(b.meta, keyCount, uint64(n)); err != nil {
		return err
	}
	return store.PutUint(b.meta, keyBytes, uint64(size))
}

// Wait returns a channel that is closed once the queue holds an item (at
// once when it already does).
func (q *Queue) Wait() chan struct{} {
	c := make(chan struct{})
	q.mu.Lock()
	defer q.mu.Unlock()
	if n, _, err := q.Len(); err != nil || n > 0 {
		// On a read error, wake the consumer: Peek reports the error.
		close(c)
		return c
	}
	q.waiting = append(q.waiting, c)
	return c
}

// WaitForEmpty returns a channel that is closed once the queue is empty (at
// once when it already is).
func (q *Queue) WaitForEmpty() <-chan struct{} {
	c := make(chan struct{})
	q.mu.Lock()
	defer q.mu.Unlock()
	if n, _, err := q.Len(); err == nil && n == 0 {
		close(c)
		return c
	}
	q.empty = append(q.empty, c)
	return c
}

// Enqueue adds the message p reads (a serialised PUBLISH packet) to the
// end of the queue in a transaction of its own. It returns an error
// wrapping ErrFull at the queue's bounds.
func (q *Queue) Enqueue(p io.Reader) error {
	b, err := io.ReadAll(p)
	if err != nil {
		return fmt.Errorf("mqttsession: reading message: %w", err)
	}
	return store.Err(q.db.Update(func(tx *bolt.Tx) error { return q.EnqueueTx(tx, b) }))
}

// EnqueueTx adds msg (a serialised PUBLISH packet) to the end of the queue
// inside tx. It counts only once tx commits; the consumer sees it then. It
// returns an error wrapping ErrFull at the queue's bounds.
func (q *Queue) EnqueueTx(tx *bolt.Tx, msg []byte) error {
	b, err := q.buckets(tx)
	if err != nil {
		return err
	}
	n, size := b.count()
	if n+1 > q.maxItems || size+int64(len(msg)) > q.maxBytes {
		return fmt.Errorf("%w: %d messages, %d bytes queued", ErrFull, n, size)
	}
	seq, err := b.items.NextSequence()
	if err != nil {
		return err
	}
	if err := b.items.Put(seqKey(seq), msg); err != nil {
		return store.Err(err)
	}
	if err := b.setCount(n+1, size+int64(len(msg))); err != nil {
		return store.Err(err)
	}
	tx.OnCommit(q.notifyQueued)
	return nil
}

func (q *Queue) notifyQueued() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, c := range q.waiting {
		close(c)
	}
	q.waiting = nil
}

func (q *Queue) notifyEmpty() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, c := range q.empty {
		close(c)
	}
	q.empty = nil
}

// Len returns the number of queued messages and their total size.
func (q *Queue) Len() (n int, size int64, err error) {
	err = q.db.View(func(tx *bolt.Tx) error {
		b, err := q.buckets(tx)
		if err != nil {
			return err
		}
		n, size = b.count()
		return nil
	})
	return n, size, err
}

// Peek returns the oldest queued message without removing it. It returns
// queue.ErrEmpty when there is none. The caller must call Leave, Remove or
// Quarantine on the entry before calling Peek again.
func (q *Queue) Peek() (queue.Entry, error) {
	var e *entry
	err := q.db.View(func(tx *bolt.Tx) error {
		b, err := q.buckets(tx)
		if err != nil {
			return err
		}
		k, v := b.items.Cursor().First()
		if k == nil {
			return queue.ErrEmpty
		}
		e = &entry{q: q, key: bytes.Clone(k), msg: bytes.Clone(v)}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// entry is one queued message, as Peek returned it.
type entry struct {
	q   *Queue
	key []byte
	msg []byte
}

// Reader implements queue.Entry.
func (e *entry) Reader() (io.Reader, error) { return bytes.NewReader(e.msg), nil }

// Leave implements queue.Entry: the message stays first in the queue.
func (e *entry) Leave() error { return nil }

// Remove implements queue.Entry: the message leaves the queue.
func (e *entry) Remove() error { return e.q.remove(e.key, false) }

// Quarantine implements queue.Entry: the message, which the consumer could
// not parse, leaves the queue for a bounded side bucket.
func (e *entry) Quarantine() error { return e.q.remove(e.key, true) }

func (q *Queue) remove(key []byte, quarantine bool) error {
	var empty bool
	err := q.db.Update(func(tx *bolt.Tx) error {
		b, err := q.buckets(tx)
		if err != nil {
			return err
		}
		v := b.items.Get(key)
		if v == nil {
			return nil // already removed
		}
		if quarantine {
			if err := q.quarantine(b, v); err != nil {
				return err
			}
		}
		n, size := b.count()
		n, size = n-1, size-int64(len(v))
		if err := b.items.Delete(key); err != nil {
			return err
		}
		empty = n <= 0
		return b.setCount(max(n, 0), max(size, 0))
	})
	if err != nil {
		return store.Err(err)
	}
	if empty {
		q.notifyEmpty()
	}
	return nil
}

func (q *Queue) quarantine(b qbuckets, v []byte) error {
	seq, err := b.bad.NextSequence()
	if err != nil {
		return err
	}
	if err := b.bad.Put(seqKey(seq), v); err != nil {
		return err
	}
	return trim(b.bad, maxQuarantined)
}
