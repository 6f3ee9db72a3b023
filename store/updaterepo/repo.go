package updaterepo

import (
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
)

// ErrNotFound is returned (wrapped) for a metadata file or blob the
// repository does not hold; it wraps fs.ErrNotExist.
var ErrNotFound = fmt.Errorf("updaterepo: not in the repository: %w", fs.ErrNotExist)

// ErrNothingPublished is Refresh's and Fresh's error before the first
// publish.
var ErrNothingPublished = errors.New("updaterepo: nothing published yet")

// ErrFull is returned for a put that would pass Config.MaxBytes.
var ErrFull = errors.New("updaterepo: the repository's byte bound is reached")

// Defaults of Config.
const (
	DefaultMaxBytes        = 256 << 20
	DefaultSnapshotExpiry  = 7 * 24 * time.Hour
	DefaultTimestampExpiry = 24 * time.Hour
)

var (
	bucketMeta  = []byte("meta")
	bucketBlobs = []byte("blobs")
	bucketState = []byte("state")
	keyUsed     = []byte("used")
)

// Config is what Open needs.
type Config struct {
	// Path is the bbolt file.
	Path string
	// MaxBytes bounds the bytes of metadata and blobs held.
	MaxBytes int64
	// Snapshot and Timestamp are the relay's online keys; the root must
	// name their public halves for the snapshot and timestamp roles.
	Snapshot, Timestamp ed25519.PrivateKey
	// SnapshotExpiry and TimestampExpiry are how long what the relay
	// signs stays valid.
	SnapshotExpiry, TimestampExpiry time.Duration
	Clock                           clock.Clock
}

// Repo is the relay's repository.
type Repo struct {
	cfg      Config
	db       *bolt.DB
	snap, ts signature.Signer
	mu       sync.Mutex // serialises the signing of new versions
	clk      clock.Clock
}

// Open opens (creating) the repository at cfg.Path.
func Open(cfg Config) (*Repo, error) {
	if cfg.Snapshot == nil || cfg.Timestamp == nil {
		return nil, errors.New("updaterepo: the relay's snapshot and timestamp keys are needed")
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.SnapshotExpiry == 0 {
		cfg.SnapshotExpiry = DefaultSnapshotExpiry
	}
	if cfg.TimestampExpiry == 0 {
		cfg.TimestampExpiry = DefaultTimestampExpiry
	}
	snap, err := signature.LoadSigner(cfg.Snapshot, crypto.Hash(0))
	if err != nil {
		return nil, fmt.Errorf("updaterepo: snapshot key: %w", err)
	}
	ts, err := signature.LoadSigner(cfg.Timestamp, crypto.Hash(0))
	if err != nil {
		return nil, fmt.Errorf("updaterepo: timestamp key: %w", err)
	}
	db, err := bolt.Open(cfg.Path, 0o600, &bolt.Options{Timeout: time.Second})
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
	return &Repo{cfg: cfg, db: db, snap: snap, ts: ts, clk: clock.Or(cfg.Clock)}, nil
}

// Close closes the bbolt file.
func (r *Repo) Close() error { return r.db.Close() }

// Used returns the bytes of metadata and blobs held.
func (r *Repo) Used() (int64, error) {
	var n int64
	err := r.db.View(func(tx *bolt.Tx) error {
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
// bound (a replaced value's bytes are given back).
func (r *Repo) put(tx *bolt.Tx, bucket, key, value []byte) error {
	b := tx.Bucket(bucket)
	n := used(tx) - int64(len(b.Get(key))) + int64(len(value))
	if n > r.cfg.MaxBytes {
		return fmt.Errorf("%w: %d bytes would make %d of %d", ErrFull, len(value), n, r.cfg.MaxBytes)
	}
	if err := b.Put(key, value); err != nil {
		return err
	}
	return tx.Bucket(bucketState).Put(keyUsed, binary.BigEndian.AppendUint64(nil, uint64(n)))
}

// AddBlob stores data under its SHA-256 and returns the hex of it.
func (r *Repo) AddBlob(data []byte) (string, error) {
	sum := sha256.Sum256(data)
	key := hex.EncodeToString(sum[:])
	err := r.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketBlobs).Get([]byte(key)) != nil {
			return nil
		}
		return r.put(tx, bucketBlobs, []byte(key), data)
	})
	if err != nil {
		return "", fmt.Errorf("updaterepo: blob %s: %w", key, err)
	}
	return key, nil
}

// Blob returns at most n bytes of the blob sha from offset off.
func (r *Repo) Blob(sha string, off, n int64) ([]byte, error) {
	var out []byte
	err := r.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketBlobs).Get([]byte(sha))
		switch {
		case b == nil:
			return fmt.Errorf("blob %s: %w", sha, ErrNotFound)
		case off < 0 || n < 0 || off > int64(len(b)):
			return fmt.Errorf("blob %s: range %d+%d outside its %d bytes", sha, off, n, len(b))
		}
		out = append([]byte(nil), b[off:min(off+n, int64(len(b)))]...)
		return nil
	})
	return out, err
}

// Metadata returns the metadata file name, at most max bytes.
func (r *Repo) Metadata(name string, max int64) ([]byte, error) {
	var out []byte
	err := r.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketMeta).Get([]byte(name))
		switch {
		case b == nil:
			return fmt.Errorf("%s: %w", name, ErrNotFound)
		case int64(len(b)) > max:
			return fmt.Errorf("%s: %d bytes, more than the %d asked", name, len(b), max)
		}
		out = append([]byte(nil), b...)
		return nil
	})
	return out, err
}
