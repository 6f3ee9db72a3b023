package link

import "sync"

// calls is one side's requests awaiting their answers: each side numbers
// its own requests (frame ids) and matches the answers to them. After
// fail, every waiting request and every later one gets the first error.
type calls struct {
	mu sync.Mutex
	// mu guards all following fields.
	nextID  uint64
	pending map[uint64]chan *frame
	err     error
}

// open numbers a new request and returns the channel its answer arrives
// on (nil once the link failed), or the link's error.
func (c *calls) open() (uint64, chan *frame, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, nil, c.err
	}
	if c.pending == nil {
		c.pending = map[uint64]chan *frame{}
	}
	c.nextID++
	ch := make(chan *frame, 1)
	c.pending[c.nextID] = ch
	return c.nextID, ch, nil
}

// forget stops waiting for the answer to id.
func (c *calls) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// answer hands f to the request it answers, if one waits.
func (c *calls) answer(f *frame) {
	c.mu.Lock()
	ch := c.pending[f.ID]
	delete(c.pending, f.ID)
	c.mu.Unlock()
	if ch != nil {
		ch <- f
	}
}

// fail records the first error and wakes every waiting request with nil.
func (c *calls) fail(err error) {
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

// errValue returns the error recorded by fail, or nil.
func (c *calls) errValue() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}
