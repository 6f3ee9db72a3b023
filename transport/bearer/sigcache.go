package bearer

import "sync"

// SigCache remembers tokens that passed every check, by their exact bytes
// (claims and signature), with what was decoded from them, so that a
// caller that sends many requests with one token pays once for what
// depends on those bytes alone: the prefix, the decoding and the claim
// types (checks 1 and 2 of the package doc), the canonical form (8) and
// the Ed25519 signature (9). What depends on the time or on the Verifier,
// the times (3–5), the audience (6) and the purpose (7), is checked on
// every call; the audience's comparison is remembered only for the one
// Verifier.Audience it was made against, and depends on nothing else. A
// cached entry can only ever stand for the same signed bytes. It holds at
// most its size, dropping an arbitrary entry to make room. Its zero value
// remembers nothing; use NewSigCache. It is safe for concurrent use.
type SigCache struct {
	max int
	mu  sync.Mutex
	ok  map[string]cached
}

// cached is a verified token and the Verifier.Audience its audience was
// found equal to (checkAudience depends on the two strings only).
type cached struct {
	t        *Token
	audience string
}

// maxCachedToken is the longest token SigCache keeps; the tokens this
// package issues are about 300 bytes.
const maxCachedToken = 1024

// NewSigCache returns a cache of at most size tokens.
func NewSigCache(size int) *SigCache {
	return &SigCache{max: size, ok: make(map[string]cached, min(size, 1024))}
}

func (c *SigCache) get(tok string) (cached, bool) {
	if c == nil || c.max <= 0 {
		return cached{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.ok[tok]
	return e, ok
}

func (c *SigCache) has(tok string) bool {
	_, ok := c.get(tok)
	return ok
}

// add remembers t, verified under audience; t must not change after.
func (c *SigCache) add(tok string, t *Token, audience string) {
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
	c.ok[tok] = cached{t: t, audience: audience}
}
