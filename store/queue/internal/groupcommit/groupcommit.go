// Package groupcommit is the group commit both queue engines use (the
// bbolt queue's transactions, the record log's writes and syncs): a
// caller that finds no commit in progress commits at once with whoever is
// waiting; callers that arrive during a commit go together in the next
// one, led by the first of them. No timer is involved: a batch is exactly
// the calls that arrived during the previous commit, so a lone caller
// never waits and N concurrent callers share one sync without delay.
// (bbolt's DB.Batch waits MaxBatchDelay for company even when the previous
// commit already gathered it; see docs/performance.md.)
package groupcommit

import (
	"slices"
	"sync"
)

// Group batches calls of type T. Its zero value is not ready: set Commit.
type Group[T any] struct {
	// Commit commits one batch and returns one error per call, in order
	// (a nil slice means all succeeded). It may call handOff once, when
	// the batch no longer needs to lead (the record log hands on after its
	// write, before its sync); otherwise the group hands on when Commit
	// returns. Commit runs in one leader at a time, except that after
	// handOff the next leader's Commit may start.
	Commit func(batch []T, handOff func()) []error
	// Wait, when set, runs before a leader takes its batch (the record
	// log waits there for the commit before, so the batch gathers the
	// calls of one whole commit).
	Wait func()
	// Max caps the calls in one commit (0: no cap).
	Max int

	mu      sync.Mutex
	pending []*call[T]
	running bool // a leader is committing; new calls wait in pending
	// calls holds finished calls for reuse, each with its channel: a call
	// is answered exactly once (its result, or lead), and its caller
	// returns it only after reading that answer, when no leader holds it
	// any more but in a batch it has done with.
	calls sync.Pool
}

// call is one write waiting for its commit. done receives its result, or
// lead=true when the caller must lead the next batch.
type call[T any] struct {
	v    T
	done chan result
}

type result struct {
	err  error
	lead bool
}

// Do commits v with the calls concurrent with it and returns its error.
func (g *Group[T]) Do(v T) error {
	me := g.newCall(v)
	g.mu.Lock()
	g.pending = append(g.pending, me)
	if g.running {
		g.mu.Unlock()
		r := <-me.done
		if !r.lead {
			g.free(me)
			return r.err
		}
	} else {
		g.running = true
		g.mu.Unlock()
	}
	err := g.lead(me)
	g.free(me)
	return err
}

// newCall returns a call of v, reused when one is free.
func (g *Group[T]) newCall(v T) *call[T] {
	if c, ok := g.calls.Get().(*call[T]); ok {
		c.v = v
		return c
	}
	return &call[T]{v: v, done: make(chan result, 1)}
}

// free returns c, answered and read, for reuse; its value is dropped so
// that the pool holds on to nothing of the caller's.
func (g *Group[T]) free(c *call[T]) {
	var zero T
	c.v = zero
	g.calls.Put(c)
}

// lead commits batches until me's is committed, then hands leadership to
// the first waiting call, if any.
func (g *Group[T]) lead(me *call[T]) error {
	for {
		if g.Wait != nil {
			g.Wait()
		}
		batch := g.take()
		mine := slices.Index(batch, me)
		handed := false
		handOff := func() {
			if mine >= 0 && !handed {
				handed = true
				g.handOff()
			}
		}
		vals := make([]T, len(batch))
		for i, k := range batch {
			vals[i] = k.v
		}
		errs := g.Commit(vals, handOff)
		handOff()
		for i, k := range batch {
			if i != mine {
				k.done <- result{err: at(errs, i)}
			}
		}
		if mine >= 0 {
			return at(errs, mine)
		} // else cut off by Max; me is still pending
	}
}

func at(errs []error, i int) error {
	if errs == nil {
		return nil
	}
	return errs[i]
}

// take removes the next batch from pending.
func (g *Group[T]) take() []*call[T] {
	g.mu.Lock()
	defer g.mu.Unlock()
	batch := g.pending
	if g.Max > 0 && len(batch) > g.Max {
		batch = batch[:g.Max:g.Max]
	}
	if g.pending = g.pending[len(batch):]; len(g.pending) == 0 {
		g.pending = nil // let the calls just taken be collected
	}
	return batch
}

// handOff makes the first waiting call the leader, or ends leading.
func (g *Group[T]) handOff() {
	g.mu.Lock()
	if len(g.pending) == 0 {
		g.running = false
		g.mu.Unlock()
		return
	}
	next := g.pending[0]
	g.mu.Unlock()
	next.done <- result{lead: true}
}

// Waiting returns how many calls wait for a commit (for tests).
func (g *Group[T]) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending)
}
