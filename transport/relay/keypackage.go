package relay

import (
	"context"
	"encoding/base64"
	"errors"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/agents"
)

// serveKeyPackage is GET /a/{did}/mls/key-package (draft-chapman-a2a-mls-03,
// KeyPackage publication): it hands out one KeyPackage from the pool the
// device uploaded, removing it durably first, so each is used once (RFC
// 9420, Section 16.8: KeyPackages are single-use). Callers are rate-limited
// per token DID when they send a valid DID Bearer token, else per client
// address. The answer is {"did","wire"} with wire the standard base64 of
// the MLSMessage-wrapped KeyPackage, as the reference serves it.
//
// Once the pool is empty, the agent's last-resort KeyPackage is served
// instead, to every caller, and kept (RFC 9420, Section 16.8: "An
// application MAY allow for reuse of a 'last resort' KeyPackage in order
// to prevent denial-of-service attacks"): the answer then also has
// "lastResort": true. Anyone can empty the pool, since DIDs cost nothing;
// the last-resort KeyPackage keeps the sleeping agent reachable until its
// device next links and refills it.
func (s *Relay) serveKeyPackage(w http.ResponseWriter, r *http.Request) {
	agent, ok := agentPath(w, r)
	if !ok {
		return
	}
	key := "ip:" + s.clientIP(r)
	if id, err := s.verifier.Verify(r.Header.Get("Authorization")); err == nil {
		key = "did:" + id.String()
	}
	if wait, ok := s.limiter.allow(key); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(wait))
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": "rate_limited", "message": "Too many requests — try again later"})
		return
	}
	st, ok := s.requestState(w, r, agent.String())
	if !ok {
		return
	}
	kp, lastResort, err := s.takeValidKeyPackage(r.Context(), agent)
	if errors.Is(err, agents.ErrNoKeyPackage) {
		// The device refills the pool when it next links.
		rc := s.reachability(st, s.linkUp(r.Context(), agent.String()), s.clk.Now())
		if n := rc.RetryAfter; n > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(n))
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "no_key_package", "message": "the agent's KeyPackage pool is empty until its device next links"})
		return
	}
	if err != nil {
		s.storeFailed(w, err)
		return
	}
	s.metrics.keyPackages.Inc()
	if lastResort {
		s.metrics.lastResort.Inc()
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, struct {
		DID        string `json:"did"`
		Wire       string `json:"wire"`
		LastResort bool   `json:"lastResort,omitempty"`
	}{agent.String(), base64.StdEncoding.EncodeToString(kp), lastResort})
}

// takeValidKeyPackage takes KeyPackages from agent's pool (or its
// last-resort one) until one passes the check of publication
// (checkKeyPackage) at this moment, dropping those that fail: ones that
// expired in the pool, and ones a relay of an earlier version pooled
// without checking (junk behind a valid header). A last-resort
// KeyPackage that fails is not served (ErrNoKeyPackage); the device
// replaces it at its next state.
func (s *Relay) takeValidKeyPackage(ctx context.Context, agent did.DID) ([]byte, bool, error) {
	for range agents.MaxKeyPackages + 1 {
		kp, lastResort, err := s.cfg.States.TakeKeyPackage(ctx, agent.String())
		if err != nil {
			return nil, false, err
		}
		err = s.checkKeyPackage(agent, kp, s.clk.Now())
		if err == nil {
			return kp, lastResort, nil
		}
		s.log.Warn("dropped a pooled KeyPackage that fails its check", "agent", agent.String(), "lastResort", lastResort, "err", err)
		if lastResort {
			return nil, false, agents.ErrNoKeyPackage
		}
	}
	return nil, false, agents.ErrNoKeyPackage
}

// limiter is a token bucket per key: rate tokens per per, burst rate.
type limiter struct {
	clk  clock.Clock
	rate float64 // tokens per second
	max  float64

	mu sync.Mutex
	// mu guards all following fields.
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// maxBuckets bounds the limiter's memory; idle (full) buckets are dropped
// when it is reached, and as a last resort every bucket.
const maxBuckets = 10000

func newLimiter(clk clock.Clock, rate int, per time.Duration) *limiter {
	return &limiter{clk: clk, rate: float64(rate) / per.Seconds(), max: float64(rate), buckets: map[string]*bucket{}}
}

// allow takes a token for key. When none is left it returns false and the
// whole seconds until one is.
func (l *limiter) allow(key string) (int, bool) {
	now := l.clk.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.pruneLocked(now)
		}
		b = &bucket{tokens: l.max, at: now}
		l.buckets[key] = b
	}
	b.tokens = math.Min(l.max, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	if b.tokens < 1 {
		return int(math.Ceil((1 - b.tokens) / l.rate)), false
	}
	b.tokens--
	return 0, true
}

func (l *limiter) pruneLocked(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.max {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= maxBuckets {
		l.buckets = map[string]*bucket{}
	}
}
