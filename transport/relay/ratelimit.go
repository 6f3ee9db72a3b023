package relay

import (
	"container/list"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/torpor-dev/torpor/clock"
)

// limiter is a token bucket per key: rate tokens per per, burst rate. It
// holds at most maxBuckets buckets; past that it evicts the least recently
// used one, never all, so a flood of new keys cannot reset the buckets of
// the callers it is limiting.
type limiter struct {
	clk  clock.Clock
	rate float64 // tokens per second
	max  float64
	cap  int

	mu sync.Mutex
	// mu guards all following fields.
	buckets map[string]*list.Element // of *bucket
	lru     list.List                // front: most recently used
}

type bucket struct {
	key    string
	tokens float64
	at     time.Time
}

// newKeyPackageLimits sets up the limits of KeyPackage fetches
// (serveKeyPackage) and registers their metric.
func (s *Relay) newKeyPackageLimits() {
	s.limiter = newLimiter(s.clk, s.cfg.Limits.KeyPackageRate, time.Minute)
	s.ipLimiter = newLimiter(s.clk, ipRateFactor*s.cfg.Limits.KeyPackageRate, time.Minute)
	s.budget = newLimiter(s.clk, s.cfg.Limits.KeyPackageBudget, s.cfg.Limits.KeyPackageBudgetWindow)
	s.budgetSpent = prometheus.NewCounter(prometheus.CounterOpts{Name: "torpor_relay_key_package_budget_spent_total",
		Help: "KeyPackage fetches answered from the last-resort KeyPackage (or refused) because the agent's budget per window was used up."})
	s.metrics.reg.MustRegister(s.budgetSpent)
}

// maxBuckets bounds each limiter's memory.
const maxBuckets = 10000

func newLimiter(clk clock.Clock, rate int, per time.Duration) *limiter {
	return &limiter{clk: clk, rate: float64(rate) / per.Seconds(), max: float64(rate), cap: maxBuckets, buckets: map[string]*list.Element{}}
}

// allow takes a token for key. When none is left it returns false and the
// whole seconds until one is.
func (l *limiter) allow(key string) (int, bool) {
	now := l.clk.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.buckets[key]
	if e == nil {
		if l.lru.Len() >= l.cap {
			old := l.lru.Back()
			l.lru.Remove(old)
			delete(l.buckets, old.Value.(*bucket).key)
		}
		e = l.lru.PushFront(&bucket{key: key, tokens: l.max, at: now})
		l.buckets[key] = e
	}
	l.lru.MoveToFront(e)
	b := e.Value.(*bucket)
	b.tokens = math.Min(l.max, b.tokens+max(0, now.Sub(b.at).Seconds())*l.rate)
	b.at = now
	if b.tokens < 1 {
		return int(math.Ceil((1 - b.tokens) / l.rate)), false
	}
	b.tokens--
	return 0, true
}

// len returns how many buckets l holds.
func (l *limiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lru.Len()
}

// ParseTrustedProxy parses a --trusted-proxy value: a CIDR prefix or a
// single address.
func ParseTrustedProxy(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("trusted proxy %q: not a CIDR prefix or an address", s)
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// clientIP returns the caller's address for rate limiting. Behind a
// reverse proxy (Config.HTTP.TrustForwardedFor) it is the right-most
// X-Forwarded-For entry that is not one of Config.HTTP.TrustedProxies: each
// proxy appends the address it was called from, so entries to the left of
// the last untrusted one are whatever the client chose to send. With no
// such entry it is the connection's address.
func (s *Relay) clientIP(r *http.Request) string {
	if s.cfg.HTTP.TrustForwardedFor {
		var hops []string
		for _, v := range r.Header.Values("X-Forwarded-For") {
			hops = append(hops, strings.Split(v, ",")...)
		}
		for i := len(hops) - 1; i >= 0; i-- {
			h := strings.TrimSpace(hops[i])
			if h == "" {
				continue
			}
			if !s.trustedProxy(h) {
				return h
			}
		}
	}
	host := r.RemoteAddr
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	return strings.Trim(host, "[]")
}

func (s *Relay) trustedProxy(addr string) bool {
	a, err := netip.ParseAddr(strings.Trim(addr, "[]"))
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range s.cfg.HTTP.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
