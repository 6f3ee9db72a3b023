package rollouts

import (
	"context"
	"encoding/binary"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store"
)

// Bolt is Store in a bbolt file: bucket "rollouts", a record's value its
// revision (8 bytes, big-endian) then its bytes. Each Put is one
// transaction, synced before it returns.
type Bolt struct{ db *bolt.DB }

var _ Store = (*Bolt)(nil)

var bucket = []byte("rollouts")

// OpenBolt opens (creating it if needed) the rollouts file at path.
func OpenBolt(path string) (*Bolt, error) {
	db, err := store.Open(path, nil)
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Bolt{db: db}, nil
}

// Get implements Store.
func (b *Bolt) Get(_ context.Context, id string) (value []byte, rev uint64, err error) {
	err = b.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucket).Get([]byte(id))
		if v == nil {
			return ErrNotFound
		}
		if len(v) < 8 {
			return errShort(id)
		}
		rev, value = binary.BigEndian.Uint64(v), slices.Clone(v[8:])
		return nil
	})
	return value, rev, err
}

// Put implements Store.
func (b *Bolt) Put(_ context.Context, id string, value []byte, rev uint64) (uint64, error) {
	if err := check(id, value); err != nil {
		return 0, err
	}
	err := b.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucket)
		var cur uint64
		if v := bk.Get([]byte(id)); v != nil {
			if len(v) < 8 {
				return errShort(id)
			}
			cur = binary.BigEndian.Uint64(v)
		}
		if cur != rev {
			return ErrConflict
		}
		rev++
		return bk.Put([]byte(id), append(binary.BigEndian.AppendUint64(nil, rev), value...))
	})
	if err != nil {
		return 0, store.Err(err)
	}
	return rev, nil
}

// List implements Store.
func (b *Bolt) List(context.Context) ([]string, error) {
	var ids []string
	err := b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(k, _ []byte) error {
			ids = append(ids, string(k))
			return nil
		})
	})
	return ids, err
}

// Close implements Store.
func (b *Bolt) Close() error { return b.db.Close() }

type errShort string

func (e errShort) Error() string {
	return "rollouts: the record of " + string(e) + " is damaged (shorter than its revision)"
}
