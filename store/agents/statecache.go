package agents

import (
	"bytes"
	"sync"
)

// stateCache remembers the states Bolt.Get decoded, each beside the exact
// bytes it was decoded from and the Bolt's generation (Bolt.gen) read
// before them. Get uses a cached state without reading the file only when
// the Bolt owns its file and its generation has not moved since (no write
// of the agents bucket since); otherwise it reads the agent's record in a
// read transaction and uses a cached state only when the record's bytes
// are equal to those it was decoded from, so the cache can never answer
// anything but what decoding the stored record would answer, whoever
// wrote the file (Put, Forget, or another user of the same *bolt.DB). It
// saves the read transaction and the decoding (CBOR) and their
// allocations: a relay reads an agent's state on every request for it.
// It holds at most maxCachedStates entries and maxCachedStateBytes bytes
// of records, dropping arbitrary entries to make room: enough for a fleet
// of 10,000 devices, every one of whose states the fleet console reads
// for each page (transport/relay/console, BenchmarkFleet10k).
type stateCache struct {
	mu    sync.Mutex
	m     map[string]cachedState
	bytes int
}

type cachedState struct {
	raw []byte
	st  State
	gen uint64 // the Bolt's generation when raw was last read
}

const (
	maxCachedStates     = 16384
	maxCachedStateBytes = 32 << 20
)

// fresh returns agent's state if it was cached at generation gen.
func (c *stateCache) fresh(agent string, gen uint64) (State, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[agent]
	if !ok || e.gen != gen {
		return State{}, false
	}
	return e.st, true
}

// get returns the state decoded from raw, if cached, and notes that raw
// was read at generation gen.
func (c *stateCache) get(agent string, raw []byte, gen uint64) (State, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[agent]
	if !ok || !bytes.Equal(e.raw, raw) {
		return State{}, false
	}
	e.gen = gen
	c.m[agent] = e
	return e.st, true
}

// put remembers st, decoded from raw (which put copies: bbolt's bytes
// live only as long as their transaction) read at generation gen.
func (c *stateCache) put(agent string, raw []byte, st State, gen uint64) {
	if len(raw) > maxCachedStateBytes/64 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]cachedState{}
	}
	c.drop(agent)
	for k := range c.m {
		if len(c.m) < maxCachedStates && c.bytes+len(raw) <= maxCachedStateBytes {
			break
		}
		c.drop(k)
	}
	c.m[agent] = cachedState{raw: bytes.Clone(raw), st: st, gen: gen}
	c.bytes += len(raw)
}

// forget drops agent's entry.
func (c *stateCache) forget(agent string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(agent)
}

func (c *stateCache) drop(agent string) {
	if e, ok := c.m[agent]; ok {
		c.bytes -= len(e.raw)
		delete(c.m, agent)
	}
}
