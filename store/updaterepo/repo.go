package updaterepo

import (
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"

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

// ErrNamed is RemoveBlob's error for a blob the current targets metadata
// names, as a target's contents or as one of its deltas: a device sent
// to it would fail to download it at every wake.
var ErrNamed = errors.New("updaterepo: the current targets name the blob")

// Defaults of Config.
const (
	DefaultMaxBytes        = 256 << 20
	DefaultSnapshotExpiry  = 7 * 24 * time.Hour
	DefaultTimestampExpiry = 24 * time.Hour
)

// Config is what Open and New need.
type Config struct {
	// Path is the bbolt file (Open's; New's backend is given).
	Path string
	// MaxBytes bounds the bytes of metadata and blobs held in the bbolt
	// file (Open's; a Backend given to New has its own bound).
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
	b        Backend
	snap, ts signature.Signer
	mu       sync.Mutex // serialises the signing of new versions
	clk      clock.Clock

	tmu     sync.Mutex       // tmu guards tenants
	tenants map[string]*Repo // by TenantKey, made by Tenant
}

// ErrNoPartitions is Tenant's error on a Backend that is not a
// Partitioner.
var ErrNoPartitions = errors.New("updaterepo: this repository's store keeps no tenants' repositories")

// TenantKey is the key of owner's repository: the base64url (RFC 4648,
// Section 5, unpadded) of the SHA-256 of the owner's DID.
func TenantKey(owner string) string {
	h := sha256.Sum256([]byte(owner))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// Tenant returns the repository of the tenant whose owner DID is owner:
// in the same store as r (r's Backend must be a Partitioner: the bbolt
// file's buckets "tenant.<TenantKey>.…", store/jsstore's keys
// "upt.<TenantKey>.…"), disjoint from r's and every other tenant's,
// signed with r's keys and bounded by r's bound. It is made once and kept;
// closing r leaves it usable only until the store is closed.
func (r *Repo) Tenant(owner string) (*Repo, error) {
	key := TenantKey(owner)
	r.tmu.Lock()
	defer r.tmu.Unlock()
	if t, ok := r.tenants[key]; ok {
		return t, nil
	}
	p, ok := r.b.(Partitioner)
	if !ok {
		return nil, ErrNoPartitions
	}
	b, err := p.Partition(key)
	if err != nil {
		return nil, err
	}
	t := &Repo{cfg: r.cfg, b: b, snap: r.snap, ts: r.ts, clk: r.clk}
	if r.tenants == nil {
		r.tenants = map[string]*Repo{}
	}
	r.tenants[key] = t
	return t, nil
}

// BlobBytes returns the bytes of blobs held.
func (r *Repo) BlobBytes() (int64, error) { return r.b.BlobBytes() }

// Holds reports whether the blob sha (hex SHA-256) is held: an AddBlob
// of its bytes takes no more room. It reads the repository's own record
// of its blobs (on JetStream the head every relay shares), never a
// relay's cache, so a blob another relay removed is not held.
func (r *Repo) Holds(sha string) (bool, error) {
	var held bool
	err := r.b.View(func(tx Txn) error {
		var err error
		_, held, err = tx.BlobLen(sha)
		return err
	})
	return held, err
}

// Open opens (creating) the repository in the bbolt file cfg.Path.
func Open(cfg Config) (*Repo, error) {
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Snapshot == nil || cfg.Timestamp == nil {
		return nil, errKeys
	}
	b, err := openBolt(cfg.Path, cfg.MaxBytes)
	if err != nil {
		return nil, err
	}
	r, err := New(cfg, b)
	if err != nil {
		b.Close()
		return nil, err
	}
	return r, nil
}

var errKeys = errors.New("updaterepo: the relay's snapshot and timestamp keys are needed")

// New returns the repository kept by b (Open's bbolt file, or one shared
// by the relays of a cluster: store/jsstore's Updates). Closing the Repo
// closes b.
func New(cfg Config, b Backend) (*Repo, error) {
	if cfg.Snapshot == nil || cfg.Timestamp == nil {
		return nil, errKeys
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
	return &Repo{cfg: cfg, b: b, snap: snap, ts: ts, clk: clock.Or(cfg.Clock)}, nil
}

// Close closes the backend.
func (r *Repo) Close() error { return r.b.Close() }

// Used returns the bytes of metadata and blobs held.
func (r *Repo) Used() (int64, error) { return r.b.Used() }

// AddBlob stores data under its SHA-256 and returns the hex of it.
func (r *Repo) AddBlob(data []byte) (string, error) {
	sum := sha256.Sum256(data)
	key := hex.EncodeToString(sum[:])
	if err := r.b.AddBlob(key, data); err != nil {
		return "", fmt.Errorf("updaterepo: blob %s: %w", key, err)
	}
	return key, nil
}

// RemoveBlob removes the blob sha (its SHA-256 in lower-case hex) and
// returns the bytes freed, unless the current targets metadata names it:
// then the error wraps ErrNamed and says which target. The check and the
// removal are one change of the repository (Backend.RemoveBlob), so a
// Publish racing it either finds the blob gone (and is refused) or
// names it first (and the removal is refused). ErrNotFound (wrapped) for
// a blob not held.
//
// The caller keeps uploads of the same blob out while it removes it: the
// relay holds the tenant's lock (tenants.Store.Lock) for both, since on
// JetStream the blob's parts are purged after the head no longer counts
// it, and a re-upload between the two would find its parts gone.
func (r *Repo) RemoveBlob(sha string) (int64, error) {
	if !isSHA256(sha) {
		return 0, fmt.Errorf("updaterepo: blob %q: not a SHA-256 in lower-case hex: %w", sha, ErrNotFound)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.b.RemoveBlob(sha, func(tx Txn) error { return notNamed(tx, sha) })
	if err != nil {
		return 0, fmt.Errorf("updaterepo: removing blob %s: %w", sha, err)
	}
	return n, nil
}

// isSHA256 reports whether s is 64 lower-case hex digits, as AddBlob
// names a blob.
func isSHA256(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Blob returns at most n bytes of the blob sha from offset off.
func (r *Repo) Blob(sha string, off, n int64) ([]byte, error) { return r.b.BlobRange(sha, off, n) }

// Metadata returns the metadata file name, at most max bytes.
func (r *Repo) Metadata(name string, max int64) ([]byte, error) {
	var out []byte
	err := r.b.View(func(tx Txn) error {
		b, err := tx.Meta(name)
		switch {
		case err != nil:
			return err
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
