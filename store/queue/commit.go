package queue

import (
	"fmt"

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
func newBoltCommits(db *bolt.DB) *groupcommit.Group[boltWrite] {
	return &groupcommit.Group[boltWrite]{
		Commit: func(batch []boltWrite, _ func()) []error { return commitBolt(db, batch) },
	}
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
