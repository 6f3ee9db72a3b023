package gate

// Verification at dequeue of the Autonomy Envelope (docs/envelope.md,
// "Verification at dequeue"; the seed proposal "Autonomy Envelope +
// liveness-gated authority"). A message may present a passport chain
// (transport/a2a's ExtEnvelope) with the consequential action it carries.
// The owner's policy trusts a principal for a purpose with a rule naming
// the principal and a scope; the chain the principal roots then authorizes
// the action within that scope and within the leaf passport's envelope.

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed/envelope"
	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/runtime/purpose"
)

// Presented is the Autonomy Envelope a message presented with an action.
type Presented struct {
	// Chain is the passport chain, root (the principal's passport) first,
	// each a compact JWS (governed/envelope).
	Chain []string `cbor:",omitempty"`
	// Pulse is the holder's latest signed pulse (package pulse's
	// document), verbatim; nil when none was presented.
	Pulse []byte `cbor:",omitempty"`
	// Malformed says why the presentation could not be read (the message
	// listed the extension but its metadata is not a chain); Chain is nil.
	Malformed string `cbor:",omitempty"`
	// Sender is the DID the relay's transport token proved for the
	// message's sender (runtime/drain's Record.From); empty when unknown.
	Sender string `cbor:",omitempty"`
}

// The reasons of an action presented under an envelope: ReasonEnvelope
// lets it run, every other one holds it for the owner.
const (
	ReasonEnvelope   = "envelope"
	ReasonMalformed  = "envelope-malformed"
	ReasonSignature  = "envelope-signature"
	ReasonAudience   = "envelope-audience"
	ReasonExpired    = "envelope-expired"
	ReasonBroken     = "envelope-broken-chain"
	ReasonWidened    = "envelope-widened"
	ReasonHolder     = "envelope-holder"
	ReasonPrincipal  = "envelope-principal"
	ReasonScope      = "envelope-scope"
	ReasonAmount     = "envelope-amount"
	ReasonOverCap    = "envelope-over-cap"
	ReasonBudget     = "envelope-budget"
	ReasonStalePulse = "envelope-stale-pulse"
)

// maxPulseSkew is how far in the future of the trusted time a holder's
// pulse may be dated and still count (the holder's clock may run ahead);
// a later one is stale, or a holder could sign pulses in advance.
const maxPulseSkew = time.Minute

// chainReason maps governed/envelope's typed errors to a reason.
func chainReason(err error) string {
	switch {
	case errors.Is(err, envelope.ErrBadSignature):
		return ReasonSignature
	case errors.Is(err, envelope.ErrWrongAudience):
		return ReasonAudience
	case errors.Is(err, envelope.ErrExpired):
		return ReasonExpired
	case errors.Is(err, envelope.ErrBrokenChain):
		return ReasonBroken
	case errors.Is(err, envelope.ErrWidened):
		return ReasonWidened
	case errors.Is(err, envelope.ErrMalformed), errors.Is(err, envelope.ErrUnknownVersion):
		return ReasonMalformed
	}
	return ReasonMalformed // VerifyChain returns no other error; fail closed all the same
}

// principalRule parses the Principal and Scope of a rule that trusts a
// principal's chains instead of listing counterparties.
func (rj ruleJSON) principalRule(r Rule) (Rule, error) {
	switch {
	case rj.Principal == "" || len(rj.Scope) == 0:
		return Rule{}, fmt.Errorf("a rule names a principal and a scope together")
	case len(rj.Counterparties) != 0 || len(rj.Deny) != 0:
		return Rule{}, fmt.Errorf("a rule naming a principal lists no counterparties (its scope's cp does)")
	}
	if _, err := did.Parse(rj.Principal); err != nil {
		return Rule{}, fmt.Errorf("principal: %v", err)
	}
	if _, err := envelope.ParseScope(rj.Scope); err != nil {
		return Rule{}, fmt.Errorf("scope: %v", err)
	}
	r.Principal, r.Scope = rj.Principal, append([]byte(nil), rj.Scope...)
	return r, nil
}

// principalRule returns the first rule of p trusting principal for action.
func (p *Policy) principalRule(principal, action string) (int, *Rule) {
	for i := range p.Rules {
		if p.Rules[i].Principal == principal && purpose.Match(p.Rules[i].Action, action) {
			return i, &p.Rules[i]
		}
	}
	return -1, nil
}

// evaluateEnvelope judges an action presented under an envelope at now:
//
//  1. the chain verifies for this agent at now (signatures, audience,
//     expiry, links, attenuation: Registry.VerifyChain);
//  2. a rule of p trusts the chain's principal (the root's iss) for a's
//     purpose;
//  3. the leaf passport's sub is a's issuer and the sender the relay
//     proved (holder of key: the object verified under the issuer's key,
//     receiver check 2, so the holder's key signed this very action, and
//     the relay's transport token proved the same DID sent it);
//  4. a lies within the rule's scope and within a scope of the leaf's
//     envelope (act, res, this agent among the counterparties, unit and
//     max_per_tx);
//  5. the holder's pulse is fresh when either scope sets decay_max_sec;
//  6. the rule's own unit, cap, liveness and budget (bounds), and the two
//     scopes' max_cumulative in their windows.
func (g *Gate) evaluateEnvelope(tx *bolt.Tx, a Action, p *Policy, now time.Time) (string, []charge, error) {
	pr := a.Envelope
	if pr.Malformed != "" || len(pr.Chain) == 0 {
		return ReasonMalformed, nil, nil
	}
	claims, err := g.reg.VerifyChain(pr.Chain, g.cfg.Agent.String(), fixedClock(now))
	if err != nil {
		return chainReason(err), nil, nil
	}
	leaf := claims[len(claims)-1]
	i, r := p.principalRule(claims[0].Iss, a.Purpose)
	switch {
	case r == nil:
		return ReasonPrincipal, nil, nil
	case leaf.Sub != a.Counterparty || pr.Sender != a.Counterparty:
		return ReasonHolder, nil, nil
	}
	ruleScope, err := envelope.ParseScope(r.Scope)
	if err != nil {
		return ReasonMalformed, nil, nil // checked when the policy was installed
	}
	if reason := g.admits(ruleScope, a); reason != "" {
		return reason, nil, nil
	}
	j, reason := g.leafScope(leaf.Envelope, a)
	if reason != "" {
		return reason, nil, nil
	}
	if !fresh(pr.Pulse, leaf.Sub, now, ruleScope.DecayMaxSec, leaf.Envelope[j].DecayMaxSec) {
		return ReasonStalePulse, nil, nil
	}
	reason, c, err := g.bounds(tx, a, p, i, now)
	if err != nil || reason != "policy" {
		return reason, nil, err
	}
	cs := []charge{c,
		scopeCharge(append(budgetKey(p.ID, i), "\x00scope"...), ruleScope, a, now),
		scopeCharge(leafKey(pr.Chain[len(pr.Chain)-1], j), leaf.Envelope[j], a, now)}
	// The leaf's spending counts no longer than the leaf itself: after
	// its exp no chain with it verifies.
	if exp := time.Unix(leaf.Exp, 0); cs[2].key != nil && (cs[2].until.IsZero() || exp.Before(cs[2].until)) {
		cs[2].until = exp
	}
	for _, c := range cs[1:] {
		if c.key != nil && c.amount > c.limit-g.spent(tx, c) {
			return ReasonBudget, nil, nil
		}
	}
	return ReasonEnvelope, cs, nil
}

// admits returns "" when scope s admits a, or the reason it does not: a
// states a verb s's act covers (through the registry's edges), a concrete
// resource s's res pattern covers, this agent is in s's effective
// counterparty set, and, under a cap, an amount in the cap's unit no
// higher than max_per_tx.
func (g *Gate) admits(s envelope.Scope, a Action) string {
	self := &envelope.Counterparties{Allow: []string{g.cfg.Agent.String()}}
	switch {
	case a.Act == "" || a.Res == "" || strings.Contains(a.Res, "*"):
		return ReasonScope
	case !g.reg.CoversAct(s.Act, a.Act) || !envelope.CoversRes(s.Res, a.Res) || !envelope.CoversCP(s.CP, self):
		return ReasonScope
	case s.Cap == nil:
		return ""
	case !a.HasAmount || a.Unit != s.Cap.Unit:
		return ReasonAmount
	case a.Amount > s.Cap.MaxPerTx:
		return ReasonOverCap
	}
	return ""
}

// leafScope returns the index of the first scope of env that admits a, or
// the reason none does (the most specific: a scope that covered the act,
// res and counterparty but not the amount says so).
func (g *Gate) leafScope(env []envelope.Scope, a Action) (int, string) {
	reason := ReasonScope
	for j, s := range env {
		r := g.admits(s, a)
		if r == "" {
			return j, ""
		}
		if r != ReasonScope {
			reason = r
		}
	}
	return -1, reason
}

// fresh reports whether the liveness condition of the decay windows holds
// at now: with no window set, always; otherwise the presented pulse must
// verify (package pulse: canonical, signed by the agent it names), be the
// holder's, and be no older than the tighter window (and not dated more
// than maxPulseSkew ahead of now).
func fresh(doc []byte, holder string, now time.Time, decays ...*int64) bool {
	limit := int64(-1)
	for _, d := range decays {
		if d != nil && (limit < 0 || *d < limit) {
			limit = *d
		}
	}
	if limit < 0 {
		return true
	}
	if len(doc) == 0 {
		return false
	}
	pl, err := pulse.Parse(doc)
	if err != nil || pl.Agent.String() != holder {
		return false
	}
	age := clockSince(now, pl.At)
	return age >= -maxPulseSkew && age <= time.Duration(limit)*time.Second
}

// scopeCharge is the debit of a against scope s's cumulative budget in
// its current window (epoch-aligned UTC buckets, as the rules' budgets
// are), under key; no debit (nil key) when s has no cap or a tx window.
func scopeCharge(key []byte, s envelope.Scope, a Action, now time.Time) charge {
	if s.Cap == nil {
		return charge{}
	}
	var w, until time.Time
	switch s.Cap.Window {
	case envelope.WindowUTCHour:
		w = now.Truncate(time.Hour)
		until = w.Add(time.Hour)
	case envelope.WindowUTCDay:
		w = now.Truncate(24 * time.Hour)
		until = w.Add(24 * time.Hour)
	case envelope.WindowEpochTotal:
		w = time.Unix(0, 0)
	default:
		return charge{} // tx: only max_per_tx bounds it
	}
	return charge{key: key, window: w.UTC(), amount: a.Amount, limit: s.Cap.MaxCumulative, until: until}
}

// leafKey is the budget key of scope j of the passport token: spending is
// counted per leaf passport (by the SHA-256 of its compact form) and scope.
func leafKey(token string, j int) []byte {
	h := sha256.Sum256([]byte(token))
	return fmt.Appendf([]byte("envelope\x00"), "%x\x00%d", h, j)
}

// fixedClock is the instant a decision is judged at, for VerifyChain.
type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

func (c fixedClock) NewTimer(time.Duration) clock.Timer {
	panic(fmt.Sprintf("gate: the decision clock (%v) makes no timers", time.Time(c)))
}
