package bearer

import "sync"

// SigCache remembers tokens whose Ed25519 signature verified (check 9 of
// the package doc), so that a caller that sends many requests with one
// token pays for the signature once. Only that check is skipped: times,
// audience, purpose and canonical form are checked on every call, and a
// token is remembered by its exact bytes (claims and signature), so a
// cached entry can only ever stand for the same signed bytes. Only
// verified tokens enter it; it holds at most its size, dropping an
// arbitrary entry to make room. Its zero value remembers nothing; use
// NewSigCache. It is safe for concurrent use.
type SigCache struct {
	max int
	mu  sync.Mutex
	ok  map[string]struct{}
}

// maxCachedToken is the longest token SigCache keeps; the tokens this
// package issues are about 300 bytes.
const maxCachedToken = 1024

// NewSigCache returns a cache of at most size tokens.
func NewSigCache(size int) *SigCache {
	return &SigCache{max: size, ok: make(map[string]struct{}, min(size, 1024))}
}

func (c *SigCache) has(tok string) bool {
	if c == nil || c.max <= 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.ok[tok]
	return ok
}

func (c *SigCache) add(tok string) {
	if c == nil || c.max <= 0 || len(tok) > maxCachedToken {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ok) >= c.max {
		for k := range c.ok {
			delete(c.ok, k)
			break
		}
	}
	c.ok[tok] = struct{}{}
}
