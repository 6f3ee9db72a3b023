package queue

import (
	"fmt"
	"os"
	"runtime/debug"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/queue/internal/groupcommit"
)

// boltWrite is one Bolt write: a function run in a shared transaction.
type boltWrite = func(*bolt.Tx) error

// newBoltCommits returns the bbolt queue's group commit
// (internal/groupcommit) over db: a batch is one bbolt transaction, fsync'd
// once.
//
// Like DB.Batch, a batch whose function fails is rolled back and re-run
// without that function, which then runs alone and gets its own result,
// so functions may run more than once and must be idempotent.
//
// A panic inside bbolt itself (a damaged page it meets while it rebalances
// or spills the tree in Commit, after the start check passed) fails the
// batch with a *store.CorruptError and every later batch with the same
// error: the relay answers store_unavailable and says how to mend the file,
// instead of dying or writing further into a damaged file. So does a file
// found removed (see removal), before or after a commit.
func newBoltCommits(db *bolt.DB, rm *removal) *groupcommit.Group[boltWrite] {
	return stickyCommits(db, rm, func(batch []boltWrite) []error { return commitBolt(db, batch) })
}

// stickyCommits is newBoltCommits with the commit of a batch as commit.
func stickyCommits(db *bolt.DB, rm *removal, commit func([]boltWrite) []error) *groupcommit.Group[boltWrite] {
	var broken atomic.Pointer[error]
	stick := func(n int, err error) []error {
		broken.Store(&err)
		return fill(n, err)
	}
	return &groupcommit.Group[boltWrite]{
		Commit: func(batch []boltWrite, _ func()) []error {
			if err := broken.Load(); err != nil {
				return fill(len(batch), *err)
			}
			if err := rm.check(); err != nil {
				return stick(len(batch), err)
			}
			out, cerr := guarded(db, func() []error { return commit(batch) })
			if cerr != nil {
				return stick(len(batch), cerr)
			}
			if err := rm.check(); err != nil {
				// The file went while this batch committed into it: its
				// callers are told nothing was stored, so nothing of the
				// file may be served from now on either.
				rm.unserved.Store(true)
				return stick(len(batch), err)
			}
			return out
		},
	}
}

// removal watches the queue's file for its removal while the relay runs
// (store.CheckLinked, through a descriptor of its own on the same file).
// The zero value (or nil) watches nothing.
type removal struct {
	f    *os.File
	path string
	// unserved is set when a commit went into the removed file: reads
	// are refused too, since its callers were told it was not stored.
	unserved atomic.Bool
}

// watchRemoval opens path to watch it.
func watchRemoval(path string) (*removal, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &removal{f: f, path: path}, nil
}

// check returns a *store.RemovedError once the file has no link left.
func (rm *removal) check() error {
	if rm == nil {
		return nil
	}
	return store.CheckLinked(rm.f, rm.path)
}

// readable returns the error a read gets once a commit went into the
// removed file, nil before.
func (rm *removal) readable() error {
	if rm == nil || !rm.unserved.Load() {
		return nil
	}
	return &store.RemovedError{Path: rm.path}
}

func (rm *removal) close() {
	if rm != nil && rm.f != nil {
		rm.f.Close()
	}
}

// guarded runs fn, turning a panic or a memory fault inside bbolt (which
// trusts its file) into a *store.CorruptError naming db's file. bbolt's
// managed transactions roll back on a panic, so the file lock and the
// writer lock are released.
func guarded[T any](db *bolt.DB, fn func() T) (out T, err *store.CorruptError) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = &store.CorruptError{Path: db.Path(), Problems: []string{fmt.Sprintf("bbolt panicked: %v", p)}}
		}
	}()
	return fn(), nil
}

func fill(n int, err error) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

// commitBolt runs batch in one transaction and returns each function's
// result. A function that fails is taken out, run alone, and the rest
// re-run together.
func commitBolt(db *bolt.DB, batch []boltWrite) []error {
	out := make([]error, len(batch))
	idx := make([]int, len(batch)) // batch[i] is the call idx[i]
	for i := range idx {
		idx[i] = i
	}
	for len(batch) > 0 {
		failed := -1
		err := db.Update(func(tx *bolt.Tx) error {
			for i, fn := range batch {
				if err := safely(fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 {
			for _, i := range idx {
				out[i] = store.Err(err)
			}
			return out
		}
		fn := batch[failed]
		out[idx[failed]] = store.Err(db.Update(func(tx *bolt.Tx) error { return safely(fn, tx) }))
		batch = append(batch[:failed:failed], batch[failed+1:]...)
		idx = append(idx[:failed:failed], idx[failed+1:]...)
	}
	return out
}

// safely runs fn, turning a panic into its error, so that one writer's
// panic (which an HTTP server recovers from) fails that writer alone and
// does not leave the others waiting for a leader that is gone.
func safely(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("queue: panic in a write: %v", p)
		}
	}()
	return fn(tx)
}
