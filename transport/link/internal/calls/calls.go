// Package calls matches the answers of the device link to the requests
// that await them; the link's client (transport/link) and server
// (transport/link/server) both use it.
package calls

import (
	"sync"

	"github.com/torpor-dev/torpor/transport/link/wire"
)

// Table is one side's requests awaiting their answers: each side numbers
// its own requests (frame ids) and matches the answers to them. After
// Fail, every waiting request and every later one gets the first error.
// The zero Table is ready to use.
type Table struct {
	mu sync.Mutex
	// mu guards all following fields.
	nextID  uint64
	pending map[uint64]chan *wire.Frame
	err     error
}

// Open numbers a new request and returns the channel its answer arrives
// on (nil once the link failed), or the link's error.
func (c *Table) Open() (uint64, chan *wire.Frame, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, nil, c.err
	}
	if c.pending == nil {
		c.pending = map[uint64]chan *wire.Frame{}
	}
	c.nextID++
	ch := make(chan *wire.Frame, 1)
	c.pending[c.nextID] = ch
	return c.nextID, ch, nil
}

// Forget stops waiting for the answer to id.
func (c *Table) Forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Answer hands f to the request it answers, if one waits.
func (c *Table) Answer(f *wire.Frame) {
	c.mu.Lock()
	ch := c.pending[f.ID]
	delete(c.pending, f.ID)
	c.mu.Unlock()
	if ch != nil {
		ch <- f
	}
}

// Fail records the first error and wakes every waiting request with nil.
func (c *Table) Fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, ch := range pending {
		ch <- nil
	}
}

// Err returns the error recorded by Fail, or nil.
func (c *Table) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}
