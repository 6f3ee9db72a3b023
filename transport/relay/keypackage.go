package relay

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/httpjson"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/shared"
	"github.com/torpor-dev/torpor/transport/bearer/bearerhttp"
)

// serveKeyPackage is GET /a/{did}/mls/key-package (draft-chapman-a2a-mls-03,
// KeyPackage publication): it hands out one KeyPackage from the pool the
// device uploaded, removing it durably first, so each is used once (RFC
// 9420, Section 16.8: KeyPackages are single-use). The caller must send a
// valid DID Bearer token (401 otherwise, as for A2A sends); callers are
// rate-limited per token DID, and per client address (clientIP) at
// ipRateFactor times that rate. The answer is {"did","wire"} with wire
// the standard base64 of the MLSMessage-wrapped KeyPackage, as the
// reference serves it.
//
// Each agent's pool gives out at most Config.Limits.KeyPackageBudget KeyPackages
// per Config.Limits.KeyPackageBudgetWindow, whoever asks: DIDs cost nothing, so
// per-caller limits alone do not keep made-up callers from emptying it.
// Beyond the budget, and once the pool is empty, the agent's last-resort
// KeyPackage is served instead, to every caller, and kept (RFC 9420,
// Section 16.8: "An application MAY allow for reuse of a 'last resort'
// KeyPackage in order to prevent denial-of-service attacks"): the answer
// then also has "lastResort": true. The last-resort KeyPackage keeps the
// sleeping agent reachable until its device next links and refills the
// pool.
func (s *Relay) serveKeyPackage(w http.ResponseWriter, r *http.Request) {
	agent, ok := agentPath(w, r)
	if !ok {
		return
	}
	if !s.allowFetch(w, r, s.clientIP(r), s.ipLimiter) {
		return
	}
	caller, err := s.verifier.Verify(r.Header.Get("Authorization"))
	if err != nil {
		bearerhttp.WriteUnauthorized(w, err)
		return
	}
	if !s.allowFetch(w, r, caller.String(), s.limiter) {
		return
	}
	st, ok := s.requestState(w, r, agent.String())
	if !ok {
		return
	}
	kp, lastResort, err := s.withinBudget(w, r, agent)
	if errors.Is(err, errAnswered) {
		return
	}
	if errors.Is(err, agents.ErrNoKeyPackage) {
		// The device refills the pool when it next links.
		rc := s.reachability(st, s.linkUp(r.Context(), agent.String()), s.clk.Now())
		if n := rc.RetryAfter; n > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(n))
		}
		httpjson.Write(w, http.StatusServiceUnavailable, map[string]any{"error": "no_key_package", "message": "the agent's KeyPackage pool is empty until its device next links"})
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
	httpjson.Write(w, http.StatusOK, struct {
		DID        string `json:"did"`
		Wire       string `json:"wire"`
		LastResort bool   `json:"lastResort,omitempty"`
	}{agent.String(), base64.StdEncoding.EncodeToString(kp), lastResort})
}

// errAnswered is withinBudget's error when it answered the request.
var errAnswered = errors.New("relay: answered")

// withinBudget takes a KeyPackage from agent's pool while its budget
// lasts, and its last-resort KeyPackage beyond (lastResort true). It
// answers 429 itself when the budget is spent and there is no last
// resort, 503 when the budget cannot be read, and returns errAnswered
// then.
func (s *Relay) withinBudget(w http.ResponseWriter, r *http.Request, agent did.DID) (kp []byte, lastResort bool, err error) {
	wait, ok, err := s.budget.Take(r.Context(), agent.String(), s.clk.Now())
	if err != nil {
		s.storeFailed(w, err)
		return nil, false, errAnswered
	}
	if ok {
		return s.takeValidKeyPackage(r.Context(), agent)
	}
	kp, err = s.validLastResort(r.Context(), agent)
	s.budgetSpent.Inc()
	if errors.Is(err, agents.ErrNoKeyPackage) {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
		httpjson.Write(w, http.StatusTooManyRequests, map[string]any{"error": "key_package_budget",
			"message": "this agent's KeyPackages per window are used up and it has no last-resort KeyPackage; try again later"})
		return nil, false, errAnswered
	}
	return kp, err == nil, err
}

// ipRateFactor is how many times the per-caller KeyPackage rate one client
// address may fetch: a proxy or NAT puts many honest callers behind one.
const ipRateFactor = 10

// allowFetch takes a token for key from l, or answers 429 (or 503 when
// the shared store failed) and returns false.
func (s *Relay) allowFetch(w http.ResponseWriter, r *http.Request, key string, l shared.Limiter) bool {
	wait, ok, err := l.Take(r.Context(), key, s.clk.Now())
	if err != nil {
		s.storeFailed(w, err)
		return false
	}
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
		httpjson.Write(w, http.StatusTooManyRequests, map[string]any{"error": "rate_limited", "message": "Too many requests — try again later"})
	}
	return ok
}

// validLastResort returns agent's last-resort KeyPackage without touching
// its pool, if it passes its check now; else ErrNoKeyPackage.
func (s *Relay) validLastResort(ctx context.Context, agent did.DID) ([]byte, error) {
	_, kp, err := s.cfg.Stores.States.KeyPackages(ctx, agent.String())
	if err != nil {
		return nil, err
	}
	if kp == nil {
		return nil, agents.ErrNoKeyPackage
	}
	if err := s.checkKeyPackage(agent, kp, s.clk.Now()); err != nil {
		s.log.Warn("the last-resort KeyPackage fails its check", "agent", agent.String(), "err", err)
		return nil, agents.ErrNoKeyPackage
	}
	return kp, nil
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
		kp, lastResort, err := s.cfg.Stores.States.TakeKeyPackage(ctx, agent.String())
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
