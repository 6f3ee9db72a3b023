package mqttsession

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/eclipse/paho.golang/paho/session/state"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store"
)

var (
	subIDs = []byte("ids")
	subSeq = []byte("seq")
	subBad = []byte("bad")
)

// maxQuarantined bounds the quarantined packets a Store keeps for analysis.
const maxQuarantined = 64

// Errors of Store and Queue.
var (
	// ErrNotFound is returned (wrapped) by Store.Get and Store.Delete for a
	// packet id the store does not hold.
	ErrNotFound = errors.New("mqttsession: packet not in store")
	// ErrFull is returned (wrapped) by Queue.Enqueue and Queue.EnqueueTx
	// when the queue is at its bound.
	ErrFull = errors.New("mqttsession: queue full")
	// ErrCorrupt is returned (wrapped) when a record does not decode.
	ErrCorrupt = errors.New("mqttsession: corrupt record")
)

// Store is one of paho's session stores in a bbolt bucket. It is safe for
// concurrent use (bbolt serialises the writes).
type Store struct {
	db     *bolt.DB
	bucket []byte

	mu sync.Mutex
	// mu guards all following fields.
	empty []chan struct{} // closed when the store becomes empty
}

// OpenStore creates the bucket name (and its sub-buckets) in db if needed
// and returns the store kept there.
func OpenStore(db *bolt.DB, name string) (*Store, error) {
	if name == "" {
		return nil, errors.New("mqttsession: empty bucket name")
	}
	s := &Store{db: db, bucket: []byte(name)}
	if err := createBuckets(db, s.bucket, subIDs, subSeq, subBad); err != nil {
		return nil, fmt.Errorf("mqttsession: opening store %q: %w", name, err)
	}
	return s, nil
}

// createBuckets creates the top-level bucket name and its sub-buckets in
// db if needed, in one transaction.
func createBuckets(db *bolt.DB, name []byte, subs ...[]byte) error {
	err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(name)
		if err != nil {
			return err
		}
		for _, sub := range subs {
			if _, err := b.CreateBucketIfNotExists(sub); err != nil {
				return err
			}
		}
		return nil
	})
	return store.Err(err)
}

// NewState returns paho session state whose client- and server-originated
// packets live in the buckets prefix+"-client" and prefix+"-server" of db,
// and the client store (to wait for acknowledgements). Set the state as
// the paho.ClientConfig's Session (mqttconn.Config.Client.Session).
func NewState(db *bolt.DB, prefix string) (*state.State, *Store, error) {
	c, err := OpenStore(db, prefix+"-client")
	if err != nil {
		return nil, nil, err
	}
	s, err := OpenStore(db, prefix+"-server")
	if err != nil {
		return nil, nil, err
	}
	return state.New(c, s), c, nil
}

// buckets is a store's sub-buckets in one transaction.
type buckets struct{ ids, seq, bad *bolt.Bucket }

func (s *Store) buckets(tx *bolt.Tx) (buckets, error) {
	top := tx.Bucket(s.bucket)
	if top == nil {
		return buckets{}, fmt.Errorf("mqttsession: bucket %q missing (use OpenStore)", s.bucket)
	}
	return buckets{top.Bucket(subIDs), top.Bucket(subSeq), top.Bucket(subBad)}, nil
}

// update runs fn in a read-write transaction and wakes WaitForEmpty's
// callers when the store is empty after it.
func (s *Store) update(fn func(b buckets) error) error {
	var empty bool
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := s.buckets(tx)
		if err != nil {
			return err
		}
		if err := fn(b); err != nil {
			return err
		}
		k, _ := b.ids.Cursor().First()
		empty = k == nil
		return nil
	})
	if err == nil && empty {
		s.mu.Lock()
		for _, c := range s.empty {
			close(c)
		}
		s.empty = nil
		s.mu.Unlock()
	}
	return store.Err(err)
}

// WaitForEmpty returns a channel that is closed once the store holds no
// packet (at once when it holds none): for a client store, once every
// QoS 1 publication was acknowledged.
func (s *Store) WaitForEmpty() <-chan struct{} {
	c := make(chan struct{})
	s.mu.Lock()
	defer s.mu.Unlock()
	if ids, err := s.List(); err == nil && len(ids) == 0 {
		close(c)
		return c
	}
	s.empty = append(s.empty, c)
	return c
}

func (s *Store) view(fn func(b buckets) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		b, err := s.buckets(tx)
		if err != nil {
			return err
		}
		return fn(b)
	})
}

// Put stores the packet w writes under packetID, replacing any packet
// already stored under that id, and makes it the newest in List's order.
func (s *Store) Put(packetID uint16, packetType byte, w io.WriterTo) error {
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return fmt.Errorf("mqttsession: serialising packet %d: %w", packetID, err)
	}
	return s.update(func(b buckets) error {
		if err := b.unindex(packetID); err != nil {
			return err
		}
		seq, err := b.seq.NextSequence()
		if err != nil {
			return err
		}
		v := make([]byte, 0, 9+buf.Len())
		v = binary.BigEndian.AppendUint64(v, seq)
		v = append(v, packetType)
		v = append(v, buf.Bytes()...)
		if err := b.ids.Put(idKey(packetID), v); err != nil {
			return err
		}
		return b.seq.Put(seqKey(seq), idKey(packetID))
	})
}

// unindex removes packetID's entry from the sequence index, if it has one.
func (b buckets) unindex(packetID uint16) error {
	v := b.ids.Get(idKey(packetID))
	if v == nil {
		return nil
	}
	if len(v) < 9 {
		return fmt.Errorf("%w: packet %d", ErrCorrupt, packetID)
	}
	return b.seq.Delete(v[:8])
}

// Get returns the packet stored under packetID. It returns an error
// wrapping ErrNotFound when there is none.
func (s *Store) Get(packetID uint16) (io.ReadCloser, error) {
	var p []byte
	err := s.view(func(b buckets) error {
		v := b.ids.Get(idKey(packetID))
		switch {
		case v == nil:
			return fmt.Errorf("%w: id %d", ErrNotFound, packetID)
		case len(v) < 9:
			return fmt.Errorf("%w: packet %d", ErrCorrupt, packetID)
		}
		p = bytes.Clone(v[9:])
		return nil
	})
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(p)), nil
}

// Delete removes the packet stored under id. It returns an error wrapping
// ErrNotFound when there is none (paho only logs it).
func (s *Store) Delete(id uint16) error {
	return s.update(func(b buckets) error {
		if b.ids.Get(idKey(id)) == nil {
			return fmt.Errorf("%w: id %d", ErrNotFound, id)
		}
		if err := b.unindex(id); err != nil {
			return err
		}
		return b.ids.Delete(idKey(id))
	})
}

// Quarantine moves the packet stored under id, which paho found corrupt,
// out of the session into a bounded side bucket kept for analysis. The
// oldest quarantined packets are dropped beyond 64.
func (s *Store) Quarantine(id uint16) error {
	return s.update(func(b buckets) error {
		v := b.ids.Get(idKey(id))
		if v == nil {
			return fmt.Errorf("%w: id %d", ErrNotFound, id)
		}
		seq, err := b.bad.NextSequence()
		if err != nil {
			return err
		}
		rec := append(idKey(id), v[min(len(v), 9):]...)
		if err := b.bad.Put(seqKey(seq), rec); err != nil {
			return err
		}
		if err := trim(b.bad, maxQuarantined); err != nil {
			return err
		}
		if err := b.unindex(id); err != nil {
			return err
		}
		return b.ids.Delete(idKey(id))
	})
}

// trim deletes the first keys of b until at most n remain.
func trim(b *bolt.Bucket, n int) error {
	excess := count(b) - n
	c := b.Cursor()
	for k, _ := c.First(); k != nil && excess > 0; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
		excess--
	}
	return nil
}

// List returns the stored packet ids in the order they were put.
func (s *Store) List() ([]uint16, error) {
	var ids []uint16
	err := s.view(func(b buckets) error {
		return b.seq.ForEach(func(_, v []byte) error {
			if len(v) != 2 {
				return fmt.Errorf("%w: sequence index entry", ErrCorrupt)
			}
			ids = append(ids, binary.BigEndian.Uint16(v))
			return nil
		})
	})
	return ids, err
}

// Reset deletes every stored packet (a session that the broker no longer
// has). Quarantined packets are kept.
func (s *Store) Reset() error {
	return s.update(func(b buckets) error {
		for _, sub := range []*bolt.Bucket{b.ids, b.seq} {
			if err := deleteAll(sub); err != nil {
				return err
			}
		}
		return nil
	})
}

// Quarantined returns the number of quarantined packets kept.
func (s *Store) Quarantined() (n int, err error) {
	err = s.view(func(b buckets) error {
		n = count(b.bad)
		return nil
	})
	return n, err
}

// count counts b's keys with a cursor: Bucket.Stats does not see the
// uncommitted writes of the transaction it runs in.
func count(b *bolt.Bucket) int {
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n
}

func deleteAll(b *bolt.Bucket) error {
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

func idKey(id uint16) []byte { return binary.BigEndian.AppendUint16(nil, id) }

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }
