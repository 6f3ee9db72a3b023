package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/runtime/purpose"
)

// PurposePolicy is the purpose of the Governed Object an owner signs to
// grant the agent unsupervised authority.
const PurposePolicy = "torpor:policy"

// Policy is the owner's grant of bounded unsupervised authority: the
// Autonomy Envelope's permitted actions, per-action cap, windowed budget
// and counterparty sets, valid until the object's expiry.
type Policy struct {
	// ID and IssuedAt identify the Governed Object the policy came in.
	ID       string    `cbor:"1,keyasint"`
	IssuedAt time.Time `cbor:"2,keyasint"`
	// Expires is the object's effective expiry; the policy grants nothing
	// at or after it.
	Expires time.Time `cbor:"3,keyasint"`
	// Agent is the DID of the agent the policy is for.
	Agent string `cbor:"4,keyasint"`
	// DecayMax suspends the authority when the agent's latest liveness
	// pulse is older than this (zero: no liveness condition).
	DecayMax time.Duration `cbor:"5,keyasint,omitempty"`
	Rules    []Rule        `cbor:"6,keyasint"`
}

// Rule allows one kind of action unsupervised.
type Rule struct {
	// Action is a purpose pattern: "action:hold" or "action:*".
	Action string `cbor:"1,keyasint"`
	// Unit is the unit amounts are counted in (for example "EUR-cent").
	// When the rule has a cap or budget, an action must state an amount in
	// this unit.
	Unit string `cbor:"2,keyasint,omitempty"`
	// Cap is the largest amount one action may carry (0: no cap).
	Cap int64 `cbor:"3,keyasint,omitempty"`
	// Budget is the most all actions under this rule may carry together
	// within one Window (0: no budget).
	Budget int64         `cbor:"4,keyasint,omitempty"`
	Window time.Duration `cbor:"5,keyasint,omitempty"`
	// Counterparties lists the DIDs whose requests the rule covers; a
	// request from anyone else is held. Deny lists DIDs the rule never
	// covers, even if listed.
	Counterparties []string `cbor:"6,keyasint,omitempty"`
	Deny           []string `cbor:"7,keyasint,omitempty"`
	// Principal, when set, is the did:key of a principal whose passport
	// chains the rule trusts, within Scope, instead of listing
	// counterparties: it covers only actions presented under an Autonomy
	// Envelope whose chain that principal roots (see envelope.go). Scope is
	// the scope's JSON (lap-scope-v0, read with envelope.ParseScope).
	Principal string `cbor:"8,keyasint,omitempty"`
	Scope     []byte `cbor:"9,keyasint,omitempty"`
}

// policyJSON is the payload of a torpor:policy object.
type policyJSON struct {
	Agent       string     `json:"agent"`
	DecayMaxSec int64      `json:"decayMaxSec,omitempty"`
	Rules       []ruleJSON `json:"rules"`
}

type ruleJSON struct {
	Action         string      `json:"action"`
	Unit           string      `json:"unit,omitempty"`
	PerActionCap   json.Number `json:"perActionCap,omitempty"`
	Budget         json.Number `json:"budget,omitempty"`
	WindowSec      int64       `json:"windowSec,omitempty"`
	Counterparties []string    `json:"counterparties"`
	Deny           []string    `json:"deny,omitempty"`
	// Principal and Scope replace Counterparties and Deny in a rule for
	// actions presented under an Autonomy Envelope (envelope.go).
	Principal string          `json:"principal,omitempty"`
	Scope     json.RawMessage `json:"scope,omitempty"`
}

// ParsePolicy reads the policy in an owner-signed object. The caller has
// already run the object through the receiver checks (or VerifySignature);
// ParsePolicy checks that it is a policy, from owner, for agent, with an
// expiry, and that its rules are well formed.
func ParsePolicy(o *governed.Object, owner, agent did.DID) (Policy, error) {
	if o.Governance.Purpose != PurposePolicy {
		return Policy{}, fmt.Errorf("%w: purpose %q is not %s", ErrBadPolicy, o.Governance.Purpose, PurposePolicy)
	}
	if o.Issuer != owner {
		return Policy{}, fmt.Errorf("%w: issued by %s, not the owner", ErrBadPolicy, o.Issuer)
	}
	exp, ok := o.Expiry()
	if !ok {
		return Policy{}, fmt.Errorf("%w: a policy must declare its expiry (ttlSeconds or expiresAt)", ErrBadPolicy)
	}
	var pj policyJSON
	dec := json.NewDecoder(bytes.NewReader(o.Payload))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&pj); err != nil {
		return Policy{}, fmt.Errorf("%w: payload: %v", ErrBadPolicy, err)
	}
	if pj.Agent != agent.String() {
		return Policy{}, fmt.Errorf("%w: for agent %q, not %s", ErrBadPolicy, pj.Agent, agent)
	}
	if pj.DecayMaxSec < 0 {
		return Policy{}, fmt.Errorf("%w: decayMaxSec %d < 0", ErrBadPolicy, pj.DecayMaxSec)
	}
	p := Policy{ID: o.ID, IssuedAt: o.IssuedAt, Expires: exp, Agent: pj.Agent,
		DecayMax: time.Duration(pj.DecayMaxSec) * time.Second}
	for i, rj := range pj.Rules {
		r, err := rj.rule()
		if err != nil {
			return Policy{}, fmt.Errorf("%w: rule %d: %v", ErrBadPolicy, i, err)
		}
		p.Rules = append(p.Rules, r)
	}
	return p, nil
}

func (rj ruleJSON) rule() (Rule, error) {
	if err := purpose.CheckPattern(rj.Action); err != nil {
		return Rule{}, err
	}
	r := Rule{Action: rj.Action, Unit: rj.Unit, Window: time.Duration(rj.WindowSec) * time.Second,
		Counterparties: rj.Counterparties, Deny: rj.Deny}
	var err error
	if r.Cap, err = amount(rj.PerActionCap); err != nil {
		return Rule{}, fmt.Errorf("perActionCap: %v", err)
	}
	if r.Budget, err = amount(rj.Budget); err != nil {
		return Rule{}, fmt.Errorf("budget: %v", err)
	}
	switch {
	case (r.Cap > 0 || r.Budget > 0) && r.Unit == "":
		return Rule{}, fmt.Errorf("a cap or budget needs a unit")
	case r.Budget > 0 && r.Window <= 0:
		return Rule{}, fmt.Errorf("a budget needs windowSec > 0")
	case rj.Principal != "" || len(rj.Scope) != 0:
		return rj.principalRule(r)
	case len(r.Counterparties) == 0:
		return Rule{}, fmt.Errorf("no counterparties listed")
	}
	for _, c := range append(append([]string(nil), r.Counterparties...), r.Deny...) {
		if _, err := did.Parse(c); err != nil {
			return Rule{}, err
		}
	}
	return r, nil
}

// amount reads a non-negative integer amount in minor units, written as a
// JSON integer or a string of digits (draft Section 5.3 advises against
// floating point for amounts).
func amount(n json.Number) (int64, error) {
	if n == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a non-negative integer", n)
	}
	return v, nil
}

// rule returns the first rule of p covering action, if any, among the
// rules that name no principal.
func (p *Policy) rule(action string) (int, *Rule) {
	for i := range p.Rules {
		if p.Rules[i].Principal == "" && purpose.Match(p.Rules[i].Action, action) {
			return i, &p.Rules[i]
		}
	}
	return -1, nil
}

// covers reports whether the rule covers counterparty c.
func (r *Rule) covers(c string) bool {
	for _, d := range r.Deny {
		if d == c {
			return false
		}
	}
	for _, a := range r.Counterparties {
		if a == c {
			return true
		}
	}
	return false
}
