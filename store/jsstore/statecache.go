package jsstore

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/store/agents"
)

// StateCacheTTL is how long StateCache answers from an agent record it
// read from the stream leader before it reads the record again. The watch
// brings every write of the record in meanwhile; what it cannot bring is
// the purge of an agent that another relay forgot (Forget purges the key's
// subject, which leaves no message to watch), so a forgotten agent is
// known to a relay's cache for at most this long after.
const StateCacheTTL = time.Minute

// stateCacheSize bounds the records a StateCache holds; past it, one is
// dropped for each new one.
const stateCacheSize = 65536

// StateCache answers agents' states from memory, for the relay's request
// path: a KV watch on the bucket's agent records (s.>, updates only)
// applies every write of a record it holds, by any relay, as the stream
// delivers it; a record it does not hold, or read more than StateCacheTTL
// ago, is read from the stream leader (Agents.Get). Its writes through
// this Conn drop the record at once, so that the relay reads its own
// writes. docs/scale-out.md, "The agent-state cache", says when an answer
// may be stale and why that is safe.
type StateCache struct {
	a     *Agents
	clk   clock.Clock
	w     jetstream.KeyWatcher
	stop  context.CancelFunc
	mu    sync.Mutex
	m     map[string]*cachedState // by stateKey
	alive bool                    // the watch runs; false: read every time
}

// cachedState is an agent record as of revision rev (0: being read).
type cachedState struct {
	st    agents.State
	found bool
	rev   uint64
	read  time.Time
}

// StateCache starts the watch and returns the cache; Close stops it.
func (c *Conn) StateCache() (*StateCache, error) {
	wctx, stop := context.WithCancel(context.Background())
	w, err := c.startWatch(wctx, func(ctx context.Context) (jetstream.KeyWatcher, error) {
		return c.kv.Watch(ctx, "s.>", jetstream.UpdatesOnly())
	})
	if err != nil {
		stop()
		return nil, err
	}
	sc := &StateCache{a: c.Agents(), clk: clock.Unscaled(c.clk), w: w, stop: stop, m: map[string]*cachedState{}, alive: true}
	c.mu.Lock()
	c.cache = sc
	c.mu.Unlock()
	go sc.watch()
	return sc, nil
}

// watch applies the watched writes until the watch ends.
func (sc *StateCache) watch() {
	for e := range sc.w.Updates() {
		if e == nil {
			continue
		}
		cs := &cachedState{rev: e.Revision()}
		if e.Operation() == jetstream.KeyValuePut {
			r, err := decodeRecord(e.Key(), e.Value())
			if err != nil {
				sc.drop(e.Key())
				continue
			}
			cs.st, cs.found = r.state(), true
		}
		sc.mu.Lock()
		if old := sc.m[e.Key()]; old != nil && old.rev < cs.rev {
			cs.read = old.read
			sc.m[e.Key()] = cs
		}
		sc.mu.Unlock()
	}
	sc.mu.Lock()
	sc.alive, sc.m = false, map[string]*cachedState{}
	sc.mu.Unlock()
}

// Get returns agent's state as Agents.Get does, from memory when it can.
func (sc *StateCache) Get(ctx context.Context, agent string) (agents.State, error) {
	key, now := stateKey(agent), sc.clk.Now()
	sc.mu.Lock()
	cs := sc.m[key]
	if cs != nil && cs.rev != 0 && now.Sub(cs.read) < StateCacheTTL && sc.alive {
		sc.mu.Unlock()
		return cachedAnswer(cs)
	}
	// A placeholder (rev 0) that the watch fills if a write lands while
	// the record is read: the read then keeps the newer of the two.
	if cs == nil || cs.rev != 0 {
		sc.makeRoom()
		sc.m[key] = &cachedState{read: now}
	}
	sc.mu.Unlock()
	r, rev, found, err := sc.a.get(ctx, agent)
	if err != nil {
		sc.drop(key)
		return agents.State{}, err
	}
	cs = &cachedState{found: found, rev: rev, read: now}
	if found {
		cs.st = r.state()
	}
	sc.mu.Lock()
	if old := sc.m[key]; old != nil && old.rev > rev {
		old.read = now
		cs = old
	} else if old != nil && sc.alive {
		sc.m[key] = cs
	}
	sc.mu.Unlock()
	return cachedAnswer(cs)
}

func cachedAnswer(cs *cachedState) (agents.State, error) {
	if !cs.found {
		return agents.State{}, agents.ErrUnknownAgent
	}
	return cs.st, nil
}

// makeRoom drops one record when the cache is full; sc.mu is held.
func (sc *StateCache) makeRoom() {
	if len(sc.m) < stateCacheSize {
		return
	}
	for k := range sc.m {
		delete(sc.m, k)
		return
	}
}

// drop forgets key's record.
func (sc *StateCache) drop(key string) {
	sc.mu.Lock()
	delete(sc.m, key)
	sc.mu.Unlock()
}

// Close stops the watch.
func (sc *StateCache) Close() error {
	sc.stop()
	return sc.w.Stop()
}

// dropCached drops agent's record from the Conn's StateCache, if any,
// after a write through this Conn.
func (c *Conn) dropCached(agent string) {
	c.mu.Lock()
	sc := c.cache
	c.mu.Unlock()
	if sc != nil {
		sc.drop(stateKey(agent))
	}
}
