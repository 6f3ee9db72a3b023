package relay

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/torpor-dev/torpor/store/shared"
)

// newKeyPackageLimits sets up the relay's shared memories
// (Config.Stores.Shared, its own in memory when nil): the spent operator
// tokens, the count of wake seconds (seconds.go) and the limits of
// KeyPackage fetches (serveKeyPackage; one
// budget for the fleet on JetStream), and registers their metric.
func (s *Relay) newKeyPackageLimits() {
	if s.cfg.Stores.Shared == nil {
		s.cfg.Stores.Shared = shared.NewMemory()
	}
	s.opSpent = s.cfg.Stores.Shared.Spent("operator", maxOperatorSpent)
	s.seconds.s = s.cfg.Stores.Shared.WakeSeconds()
	sh, n := s.cfg.Stores.Shared, s.cfg.Limits.KeyPackageRate
	s.limiter = sh.Limiter("kp-did", shared.Rate{N: n, Per: time.Minute}, maxBuckets)
	s.ipLimiter = sh.Limiter("kp-ip", shared.Rate{N: ipRateFactor * n, Per: time.Minute}, maxBuckets)
	s.budget = sh.Limiter("kp-budget", shared.Rate{N: s.cfg.Limits.KeyPackageBudget, Per: s.cfg.Limits.KeyPackageBudgetWindow}, maxBuckets)
	s.budgetSpent = prometheus.NewCounter(prometheus.CounterOpts{Name: "torpor_relay_key_package_budget_spent_total",
		Help: "KeyPackage fetches answered from the last-resort KeyPackage (or refused) because the agent's budget per window was used up."})
	s.metrics.reg.MustRegister(s.budgetSpent)
}

// maxBuckets bounds each limiter's memory when the relay keeps it itself
// (shared.Memory evicts the least recently used bucket past it).
const maxBuckets = 10000

// retryAfter is wait in whole seconds, rounded up, for a Retry-After.
func retryAfter(wait time.Duration) int { return int((wait + time.Second - 1) / time.Second) }

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
