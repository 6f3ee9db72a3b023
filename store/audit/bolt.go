package audit

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store"
)

// bucket holds the records by Seq (8 bytes, big endian) as JSON; the
// bucket's sequence is the last Seq given. Only the oldest records are
// deleted, so the Seqs kept are contiguous and the first one less one is
// the count of dropped records.
var bucket = []byte("audit")

// Bolt is a Store in a bbolt file (the relay's audit.db).
type Bolt struct {
	db  *bolt.DB
	max int
	own bool
}

var _ Store = (*Bolt)(nil)

// OpenBolt opens (creating) the audit file at path, keeping the last max
// records (DefaultMax when zero).
func OpenBolt(path string, max int) (*Bolt, error) {
	db, err := store.Open(path, nil)
	if err != nil {
		return nil, err
	}
	s, err := NewBolt(db, max)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.own = true
	return s, nil
}

// NewBolt keeps the audit log in db, which the caller closes.
func NewBolt(db *bolt.DB, max int) (*Bolt, error) {
	if max <= 0 {
		max = DefaultMax
	}
	err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("audit: %w", store.Err(err))
	}
	return &Bolt{db: db, max: max}, nil
}

// Close closes the file if OpenBolt opened it.
func (s *Bolt) Close() error {
	if s.own {
		return s.db.Close()
	}
	return nil
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// Append implements Store.
func (s *Bolt) Append(_ context.Context, r Record) error {
	if err := Check(r); err != nil {
		return err
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		r.Seq = seq
		v, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if err := b.Put(seqKey(seq), v); err != nil {
			return err
		}
		c := b.Cursor()
		for k, _ := c.First(); k != nil && seq-binary.BigEndian.Uint64(k) >= uint64(s.max); k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
	return store.Err(err)
}

// List implements Store.
func (s *Bolt) List(_ context.Context, before uint64, limit int) (Page, error) {
	limit = Limit(limit)
	var p Page
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		if k, _ := c.First(); k != nil {
			p.Dropped = binary.BigEndian.Uint64(k) - 1
		} else {
			p.Dropped = tx.Bucket(bucket).Sequence()
		}
		k, v := c.Last()
		if before != 0 {
			if k, _ = c.Seek(seqKey(before)); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		}
		for ; k != nil; k, v = c.Prev() {
			if len(p.Records) == limit {
				p.Next = p.Records[limit-1].Seq
				break
			}
			var r Record
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("audit: record %d: %w", binary.BigEndian.Uint64(k), err)
			}
			p.Records = append(p.Records, r)
		}
		return nil
	})
	return p, store.Err(err)
}
