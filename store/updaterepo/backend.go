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
	// BlobLen returns the length of the blob sha; ok false when there is
	// none. It reads no blob bytes.
	BlobLen(sha string) (n int64, ok bool, err error)
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
	// BlobBytes returns the bytes of blobs held (Used less the
	// metadata): what a tenant's update_bytes quota bounds.
	BlobBytes() (int64, error)
	// RemoveBlob removes the blob sha and gives its bytes back, if check,
	// run on the same view of the metadata, returns nil; the change is
	// applied whole, so check's answer holds for the removal. It returns
	// the bytes freed; ErrNotFound (wrapped) when the blob is not held,
	// else check's error. The caller keeps uploads of the same blob from
	// running meanwhile (Repo.RemoveBlob).
	RemoveBlob(sha string, check func(Txn) error) (int64, error)
	Close() error
}

// Partitioner is a Backend that keeps other repositories beside its own,
// each under a key (Repo.Tenant: one per tenant of a hosted relay).
type Partitioner interface {
	// Partition returns the backend of the repository key (letters,
	// digits, '-' and '_'): disjoint from this one and from every other
	// key's, bounded as this one is. Its Close leaves the store open.
	Partition(key string) (Backend, error)
}

// buckets are the names of one repository's buckets in a bbolt file.
type buckets struct{ meta, blobs, state []byte }

// The relay's own repository's buckets; a partition's are named
// "tenant.<key>.meta" and so on (Partition).
var hostBuckets = buckets{meta: []byte("meta"), blobs: []byte("blobs"), state: []byte("state")}

var keyUsed = []byte("used")

// boltBackend is a repository in a bbolt file: the relay's own, or a
// partition of the same file (shared: then closing it leaves db open).
type boltBackend struct {
	db     *bolt.DB
	max    int64
	b      buckets
	shared bool
}

// openBolt opens (creating) the bbolt file at path.
func openBolt(path string, max int64) (*boltBackend, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("updaterepo: %w", err)
	}
	b := &boltBackend{db: db, max: max, b: hostBuckets}
	if err := b.create(); err != nil {
		db.Close()
		return nil, err
	}
	return b, nil
}

// create makes b's buckets where they are missing.
func (b *boltBackend) create() error {
	err := b.db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{b.b.meta, b.b.blobs, b.b.state} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("updaterepo: %w", err)
	}
	return nil
}

// Partition implements Partitioner: the repository key in buckets of its
// own in the same file, "tenant.<key>.meta", ".blobs" and ".state".
func (b *boltBackend) Partition(key string) (Backend, error) {
	if !validKey(key) {
		return nil, fmt.Errorf("updaterepo: partition %q: want letters, digits, '-' and '_'", key)
	}
	pre := "tenant." + key + "."
	p := &boltBackend{db: b.db, max: b.max, shared: true,
		b: buckets{meta: []byte(pre + "meta"), blobs: []byte(pre + "blobs"), state: []byte(pre + "state")}}
	return p, p.create()
}

// validKey reports whether key is a partition's key: 1 to 64 letters,
// digits, '-' and '_' (the base64url of TenantKey).
func validKey(key string) bool {
	if key == "" || len(key) > 64 {
		return false
	}
	for _, c := range key {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

type boltTxn struct {
	tx  *bolt.Tx
	max int64
	b   buckets
}

func (t boltTxn) Meta(name string) ([]byte, error) {
	return t.tx.Bucket(t.b.meta).Get([]byte(name)), nil
}

func (t boltTxn) Blob(sha string) ([]byte, error) {
	return t.tx.Bucket(t.b.blobs).Get([]byte(sha)), nil
}

func (t boltTxn) BlobLen(sha string) (int64, bool, error) {
	b := t.tx.Bucket(t.b.blobs).Get([]byte(sha))
	return int64(len(b)), b != nil, nil
}

func (t boltTxn) PutMeta(name string, b []byte) error {
	return put(t.tx, t.max, t.b, t.b.meta, []byte(name), b)
}

func (b *boltBackend) Update(fn func(Txn) error) error {
	return b.db.Update(func(tx *bolt.Tx) error { return fn(boltTxn{tx: tx, max: b.max, b: b.b}) })
}

func (b *boltBackend) View(fn func(Txn) error) error {
	return b.db.View(func(tx *bolt.Tx) error { return fn(boltTxn{tx: tx, max: b.max, b: b.b}) })
}

// Close closes the file, unless b is a partition of it.
func (b *boltBackend) Close() error {
	if b.shared {
		return nil
	}
	return b.db.Close()
}

func (b *boltBackend) Used() (int64, error) {
	var n int64
	err := b.db.View(func(tx *bolt.Tx) error {
		n = used(tx, b.b)
		return nil
	})
	return n, err
}

// BlobBytes implements Backend: the lengths of the blobs, summed.
func (b *boltBackend) BlobBytes() (int64, error) {
	var n int64
	err := b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(b.b.blobs).ForEach(func(_, v []byte) error {
			n += int64(len(v))
			return nil
		})
	})
	return n, err
}

func used(tx *bolt.Tx, b buckets) int64 {
	v := tx.Bucket(b.state).Get(keyUsed)
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

// put stores value under key in bucket (one of bs), counting its bytes
// against the bound max (a replaced value's bytes are given back).
func put(tx *bolt.Tx, max int64, bs buckets, bucket, key, value []byte) error {
	b := tx.Bucket(bucket)
	n := used(tx, bs) - int64(len(b.Get(key))) + int64(len(value))
	if n > max {
		return fmt.Errorf("%w: %d bytes would make %d of %d", ErrFull, len(value), n, max)
	}
	if err := b.Put(key, value); err != nil {
		return err
	}
	return tx.Bucket(bs.state).Put(keyUsed, binary.BigEndian.AppendUint64(nil, uint64(n)))
}

func (b *boltBackend) AddBlob(sha string, data []byte) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(b.b.blobs).Get([]byte(sha)) != nil {
			return nil
		}
		return put(tx, b.max, b.b, b.b.blobs, []byte(sha), data)
	})
}

// RemoveBlob implements Backend in one bbolt write transaction.
func (b *boltBackend) RemoveBlob(sha string, check func(Txn) error) (int64, error) {
	var n int64
	err := b.db.Update(func(tx *bolt.Tx) error {
		blobs := tx.Bucket(b.b.blobs)
		v := blobs.Get([]byte(sha))
		if v == nil {
			return fmt.Errorf("blob %s: %w", sha, ErrNotFound)
		}
		if err := check(boltTxn{tx: tx, max: b.max, b: b.b}); err != nil {
			return err
		}
		n = int64(len(v))
		if err := blobs.Delete([]byte(sha)); err != nil {
			return err
		}
		return tx.Bucket(b.b.state).Put(keyUsed, binary.BigEndian.AppendUint64(nil, uint64(used(tx, b.b)-n)))
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

func (b *boltBackend) BlobRange(sha string, off, n int64) ([]byte, error) {
	var out []byte
	err := b.db.View(func(tx *bolt.Tx) error {
		blob := tx.Bucket(b.b.blobs).Get([]byte(sha))
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
