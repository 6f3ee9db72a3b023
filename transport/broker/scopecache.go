package broker

import (
	"sync"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
)

// ScopeCacheTTL is how long the broker keeps what its Scope said of a
// DID. The ACL asks at every subscription, publish and delivery; the
// tenants ledger behind the Scope is a bbolt file or, with --store
// jetstream, a NATS key-value bucket, a network round trip away. A change
// of a tenant's devices or operators reaches the ACL within this time.
const ScopeCacheTTL = 5 * time.Second

// scopeCacheMax bounds the DIDs a scopeCache holds; past it the cache
// starts over.
const scopeCacheMax = 16384

// scopeCache is a Scope that remembers its answers for ScopeCacheTTL on
// clk; errors are not remembered.
type scopeCache struct {
	s   Scope
	clk clock.Clock

	mu      sync.Mutex
	tenants map[did.DID]cachedTenant
	ops     map[did.DID]cachedOp
}

type cachedTenant struct {
	t     TenantView
	in    bool
	until time.Time
}

type cachedOp struct {
	op    bool
	until time.Time
}

// newScopeCache returns s behind a cache, or nil for a nil s.
func newScopeCache(s Scope, clk clock.Clock) Scope {
	if s == nil {
		return nil
	}
	return &scopeCache{s: s, clk: clock.Or(clk), tenants: map[did.DID]cachedTenant{}, ops: map[did.DID]cachedOp{}}
}

// DeviceTenant implements Scope.
func (c *scopeCache) DeviceTenant(dev did.DID) (TenantView, bool, error) {
	now := c.clk.Now()
	c.mu.Lock()
	e, ok := c.tenants[dev]
	c.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.t, e.in, nil
	}
	t, in, err := c.s.DeviceTenant(dev)
	if err != nil {
		return t, in, err
	}
	c.mu.Lock()
	if len(c.tenants) >= scopeCacheMax {
		clear(c.tenants)
	}
	c.tenants[dev] = cachedTenant{t: t, in: in, until: now.Add(ScopeCacheTTL)}
	c.mu.Unlock()
	return t, in, nil
}

// IsTenantOperator implements Scope.
func (c *scopeCache) IsTenantOperator(d did.DID) (bool, error) {
	now := c.clk.Now()
	c.mu.Lock()
	e, ok := c.ops[d]
	c.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.op, nil
	}
	op, err := c.s.IsTenantOperator(d)
	if err != nil {
		return op, err
	}
	c.mu.Lock()
	if len(c.ops) >= scopeCacheMax {
		clear(c.ops)
	}
	c.ops[d] = cachedOp{op: op, until: now.Add(ScopeCacheTTL)}
	c.mu.Unlock()
	return op, nil
}
