package relay

import (
	"context"
	"net/http"
	"sync"

	"github.com/torpor-dev/torpor/did"
)

// DefaultTenantInFlight is how many of one tenant's sender requests the
// relay works on at once when Config.TenantInFlight is zero.
const DefaultTenantInFlight = 8

// tenantGate bounds how many of each tenant's sender requests the relay
// works on at once (docs/tenants.md, "Noisy neighbours"). A request past
// its tenant's bound waits, before its body is read, for one of the
// tenant's requests to end; the waiters of one tenant go in the order
// they came (a buffered channel's senders are queued FIFO). Other
// tenants' requests never wait for it: a tenant flooding the relay keeps
// at most its bound of requests reading, parsing and committing, beside
// every other tenant's.
type tenantGate struct {
	limit int
	mu    sync.Mutex
	// mu guards slots.
	slots map[string]chan struct{} // by tenant; made on first use
	// onWait, when set, is called with the tenant of each request that
	// has to wait (tests).
	onWait func(tenant string)
}

// enter waits for a place among tenant's requests and returns the
// function that gives it back (once, however often it is called), and
// whether it had to wait. It fails, holding nothing, when ctx ends first
// (the sender hung up).
func (g *tenantGate) enter(ctx context.Context, tenant string) (leave func(), waited bool, err error) {
	g.mu.Lock()
	if g.slots == nil {
		g.slots = map[string]chan struct{}{}
	}
	c := g.slots[tenant]
	if c == nil {
		c = make(chan struct{}, max(g.limit, 1))
		g.slots[tenant] = c
	}
	g.mu.Unlock()
	select {
	case c <- struct{}{}:
	default:
		waited = true
		if g.onWait != nil {
			g.onWait(tenant)
		}
		select {
		case c <- struct{}{}:
		case <-ctx.Done():
			return nil, true, ctx.Err()
		}
	}
	var once sync.Once
	return func() { once.Do(func() { <-c }) }, waited, nil
}

// tenantAdmit takes a place for a sender's request to agent among its
// tenant's requests (tenantGate), before the request's body is read. An
// agent in no tenant, or a relay without tenants, takes none. It answers,
// and returns false, when the request ends here: the ledger failed, or
// the sender hung up while waiting (nothing is answered then).
func (s *Relay) tenantAdmit(w http.ResponseWriter, r *http.Request, agent did.DID) (leave func(), ok bool) {
	l := s.cfg.Stores.Tenants
	if l == nil {
		return func() {}, true
	}
	owner, in, err := l.TenantOf(agent)
	if err != nil {
		s.storeFailedRPC(w, rpcRequest{}, err)
		return nil, false
	}
	if !in {
		return func() {}, true
	}
	leave, waited, err := s.tenantGate.enter(r.Context(), owner.String())
	if waited {
		s.metrics.tenantWait(owner)
	}
	if err != nil {
		return nil, false
	}
	return leave, true
}
