// Package store opens the bbolt files Torpor keeps on flash and holds the
// options that make them safe on small boards. Each kind of record lives in
// a subpackage that works inside a caller's transaction where several must
// commit together: store/replay (the device's replay cache), store/queue
// and store/agents (the relay's queue and per-agent state, each behind an
// interface a distributed backend can implement too), and the MLS,
// KeyPackage and ledger stores of the agent.
//
// # 32-bit boards
//
// bbolt maps the whole file. On linux/arm the mapping is capped at 2 GB and
// every remap needs contiguous free address space, which a 32-bit process
// may not have (a 1 GB initial mapping fails under qemu-arm after other
// allocations). Open therefore uses a small initial mapping and caps the
// file with Options.MaxSize on 32-bit targets; a write that would grow the
// file past it fails with ErrFull instead of crashing the process.
package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// ErrFull is returned (wrapped) when a write would grow a store past its
// configured maximum size.
var ErrFull = errors.New("store: file reached its maximum size")

// Options configure Open. The zero value is ready to use.
type Options struct {
	// MaxSize caps the file size in bytes. Zero means the default for the
	// platform: 256 MiB on 32-bit targets, 4 GiB on 64-bit ones.
	MaxSize int64
	// NoSync disables fsync. Only for benchmarks that measure the cost of
	// durability; Torpor never sets it in production.
	NoSync bool
	// Timeout bounds the wait for the file lock held by another process.
	// Zero means 5 seconds.
	Timeout time.Duration
	// Check runs bbolt's consistency check (tx.Check) after opening, and
	// turns a damaged file (refused meta pages, truncated, a page that
	// fails the check, a panic while reading it) into a *CorruptError. It
	// reads every page: for files opened once per process, as the agent's
	// store and the relay's files at start (cmd/torpor-relay).
	Check bool
}

// Open opens (creating if needed, with mode 0600 in a 0700 directory) the
// bbolt file at path.
func Open(path string, o *Options) (*bolt.DB, error) {
	if o == nil {
		o = &Options{}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	max := o.MaxSize
	if max == 0 {
		max = defaultMaxSize
	}
	if max > maxMapSize {
		max = maxMapSize
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	bo := &bolt.Options{
		Timeout:         timeout,
		NoSync:          o.NoSync,
		InitialMmapSize: initialMmapSize,
		MaxSize:         int(max),
		FreelistType:    bolt.FreelistMapType,
	}
	if o.Check {
		return openChecked(path, bo)
	}
	db, err := bolt.Open(path, 0o600, bo)
	if err != nil {
		return nil, fmt.Errorf("store: opening %s: %w", path, err)
	}
	return db, nil
}

// Err maps bbolt's size error to ErrFull and returns other errors as they are.
func Err(err error) error {
	if errors.Is(err, berrors.ErrMaxSizeReached) {
		return fmt.Errorf("%w: %v", ErrFull, err)
	}
	return err
}
