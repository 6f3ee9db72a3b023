package updaterepo

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Txn is one change (or read) of a repository's metadata: a Backend runs
// it on a consistent view and applies its writes all at once or not at
// all.
type Txn interface {
	// Meta returns the metadata file name, nil when there is none. The
	// bytes are valid until the Txn ends.
	Meta(name string) ([]byte, error)
	// PutMeta writes the metadata file name, counting its bytes against
	// the bound (a replaced file's bytes are given back); ErrFull past
	// it.
	PutMeta(name string, b []byte) error
	// Blob returns the whole blob sha, nil when there is none.
	Blob(sha string) ([]byte, error)
}

// Backend is where a Repo keeps its files: a bbolt file (Open) or a
// store shared by the relays of a cluster (store/jsstore's Updates).
// Every Backend holds its bytes of metadata and blobs within a bound given
// when it is made, refusing a write past it with ErrFull.
type Backend interface {
	// Update runs fn and applies its writes atomically. A backend shared
	// by several writers may run fn again on a newer view when another
	// writer changed the repository meanwhile (compare-and-swap), so fn
	// must depend only on what it reads through the Txn.
	Update(fn func(Txn) error) error
	// View runs fn on a consistent view; fn's writes fail.
	View(fn func(Txn) error) error
	// AddBlob stores data under sha (its SHA-256 in hex); a blob already
	// held is left as it is.
	AddBlob(sha string, data []byte) error
	// BlobRange returns at most n bytes of the blob sha from offset off;
	// ErrNotFound (wrapped) when there is none.
	BlobRange(sha string, off, n int64) ([]byte, error)
	// Used returns the bytes of metadata and blobs held.
	Used() (int64, error)
	Close() error
}

var (
	bucketMeta  = []byte("meta")
	bucketBlobs = []byte("blobs")
	bucketState = []byte("state")
	keyUsed     = []byte("used")
)

// boltBackend is the repository in one bbolt file.
type boltBackend struct {
	db  *bolt.DB
	max int64
}

// openBolt opens (creating) the bbolt file at path.
func openBolt(path string, max int64) (*boltBackend, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("updaterepo: %w", err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, bucketBlobs, bucketState} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("updaterepo: %w", err)
	}
	return &boltBackend{db: db, max: max}, nil
}

type boltTxn struct {
	tx  *bolt.Tx
	max int64
}

func (t boltTxn) Meta(name string) ([]byte, error) {
	return t.tx.Bucket(bucketMeta).Get([]byte(name)), nil
}

func (t boltTxn) Blob(sha string) ([]byte, error) {
	return t.tx.Bucket(bucketBlobs).Get([]byte(sha)), nil
}

func (t boltTxn) PutMeta(name string, b []byte) error {
	return put(t.tx, t.max, bucketMeta, []byte(name), b)
}

func (b *boltBackend) Update(fn func(Txn) error) error {
	return b.db.Update(func(tx *bolt.Tx) error { return fn(boltTxn{tx: tx, max: b.max}) })
}

func (b *boltBackend) View(fn func(Txn) error) error {
	return b.db.View(func(tx *bolt.Tx) error { return fn(boltTxn{tx: tx, max: b.max}) })
}

func (b *boltBackend) Close() error { return b.db.Close() }

func (b *boltBackend) Used() (int64, error) {
	var n int64
	err := b.db.View(func(tx *bolt.Tx) error {
		n = used(tx)
		return nil
	})
	return n, err
}

func used(tx *bolt.Tx) int64 {
	v := tx.Bucket(bucketState).Get(keyUsed)
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

// put stores value under key in bucket, counting its bytes against the
// bound max (a replaced value's bytes are given back).
func put(tx *bolt.Tx, max int64, bucket, key, value []byte) error {
	b := tx.Bucket(bucket)
	n := used(tx) - int64(len(b.Get(key))) + int64(len(value))
	if n > max {
		return fmt.Errorf("%w: %d bytes would make %d of %d", ErrFull, len(value), n, max)
	}
	if err := b.Put(key, value); err != nil {
		return err
	}
	return tx.Bucket(bucketState).Put(keyUsed, binary.BigEndian.AppendUint64(nil, uint64(n)))
}

func (b *boltBackend) AddBlob(sha string, data []byte) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketBlobs).Get([]byte(sha)) != nil {
			return nil
		}
		return put(tx, b.max, bucketBlobs, []byte(sha), data)
	})
}

func (b *boltBackend) BlobRange(sha string, off, n int64) ([]byte, error) {
	var out []byte
	err := b.db.View(func(tx *bolt.Tx) error {
		blob := tx.Bucket(bucketBlobs).Get([]byte(sha))
		if blob == nil {
			return fmt.Errorf("blob %s: %w", sha, ErrNotFound)
		}
		var err error
		out, err = Slice(blob, sha, off, n)
		return err
	})
	return out, err
}

// Slice returns a copy of at most n bytes of blob (named sha) from off,
// or an error for a range outside it: every Backend's BlobRange answers
// the same.
func Slice(blob []byte, sha string, off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off > int64(len(blob)) {
		return nil, fmt.Errorf("blob %s: range %d+%d outside its %d bytes", sha, off, n, len(blob))
	}
	return append([]byte(nil), blob[off:min(off+n, int64(len(blob)))]...), nil
}
