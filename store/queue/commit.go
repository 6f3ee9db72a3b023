package queue

import (
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store"
)

// committer is the queue's group commit. A writer that finds no commit in
// progress commits at once with whoever is waiting; writers that arrive
// while a commit runs wait for it and then go together in the next one,
// led by the first of them. No timer is involved: a batch is exactly the
// writers that arrived during the previous commit, so a lone writer never
// waits and N concurrent writers share one fsync without delay. (bbolt's
// DB.Batch waits MaxBatchDelay for company even when the previous commit
// already gathered it; see docs/performance.md.)
//
// Like DB.Batch, a batch whose function fails is rolled back and re-run
// without that function, which then runs alone and gets its own result,
// so functions may run more than once and must be idempotent.
type committer struct {
	db *bolt.DB
	// max caps the calls in one commit (0: no cap).
	max int

	mu      sync.Mutex
	pending []*call
	running bool // a leader is committing; new calls wait in pending
}

// call is one write waiting for its commit. done receives its result, or
// lead=true when the caller must lead the next batch.
type call struct {
	fn   func(*bolt.Tx) error
	done chan result
}

type result struct {
	err  error
	lead bool
}

// write runs fn in a committed (fsync'd) transaction, shared with the
// writers concurrent with it, and returns fn's error or the commit's.
func (c *committer) write(fn func(*bolt.Tx) error) error {
	me := &call{fn: fn, done: make(chan result, 1)}
	c.mu.Lock()
	c.pending = append(c.pending, me)
	if c.running {
		c.mu.Unlock()
		r := <-me.done
		if !r.lead {
			return r.err
		}
	} else {
		c.running = true
		c.mu.Unlock()
	}
	return c.lead(me)
}

// lead commits batches until me has its result, then hands leadership to
// the first waiting call, if any.
func (c *committer) lead(me *call) error {
	for {
		c.mu.Lock()
		batch := c.pending
		if c.max > 0 && len(batch) > c.max {
			batch = batch[:c.max:c.max]
		}
		if c.pending = c.pending[len(batch):]; len(c.pending) == 0 {
			c.pending = nil // let the calls just taken be collected
		}
		c.mu.Unlock()
		var mine *result
		for _, r := range c.commit(batch) {
			if r.c == me {
				mine = &result{err: r.err}
				continue
			}
			r.c.done <- result{err: r.err}
		}
		c.mu.Lock()
		switch {
		case mine == nil: // cut off by max; still pending
			c.mu.Unlock()
			continue
		case len(c.pending) == 0:
			c.running = false
			c.mu.Unlock()
		default:
			next := c.pending[0]
			c.mu.Unlock()
			next.done <- result{lead: true}
		}
		return mine.err
	}
}

type commitOutcome struct {
	c   *call
	err error
}

// commit runs batch in one transaction. A function that fails is taken
// out, run alone, and the rest re-run together.
func (c *committer) commit(batch []*call) []commitOutcome {
	out := make([]commitOutcome, 0, len(batch))
	for len(batch) > 0 {
		failed := -1
		err := c.db.Update(func(tx *bolt.Tx) error {
			for i, k := range batch {
				if err := safely(k.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 {
			for _, k := range batch {
				out = append(out, commitOutcome{k, store.Err(err)})
			}
			return out
		}
		k := batch[failed]
		out = append(out, commitOutcome{k, store.Err(c.db.Update(func(tx *bolt.Tx) error { return safely(k.fn, tx) }))})
		batch = append(batch[:failed:failed], batch[failed+1:]...)
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
