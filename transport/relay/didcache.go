package relay

import (
	"sync"

	"github.com/torpor-dev/torpor/did"
)

// didCache remembers the DIDs agentPath parsed, by their spelling: every
// request to an agent names it in its path, and did.Parse (base58
// decoding, then encoding again to refuse other spellings) depends on the
// string alone. Only DIDs that parsed are kept, at most maxCachedDIDs,
// dropping an arbitrary one to make room.
type didCache struct {
	mu sync.RWMutex
	m  map[string]did.DID
}

const maxCachedDIDs = 4096

var agentDIDs = &didCache{m: map[string]did.DID{}}

func (c *didCache) parse(s string) (did.DID, error) {
	c.mu.RLock()
	d, ok := c.m[s]
	c.mu.RUnlock()
	if ok {
		return d, nil
	}
	d, err := did.Parse(s)
	if err != nil {
		return did.DID{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCachedDIDs {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[d.String()] = d
	return d, nil
}
