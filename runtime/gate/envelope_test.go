package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed/envelope"
	"github.com/torpor-dev/torpor/pulse"
)

// envWorld is a principal P, who delegates to agent A, who delegates to
// agent B; B presents the chain P→A→B with its actions to this agent.
type envWorld struct {
	*env
	p, a, b, q *did.PrivateKey
	seq        int
}

func newEnvWorld(t *testing.T) *envWorld {
	w := &envWorld{env: newEnv(t), p: key(t, 20), a: key(t, 21), b: key(t, 22), q: key(t, 23)}
	return w
}

// scopeJSON is a scope for finance:pay on res, capped per tx and per day,
// at depth, allowing this agent as the counterparty, with decay (0: none).
func (w *envWorld) scopeJSON(res string, perTx, perDay int64, depth int, decay int64) string {
	s := fmt.Sprintf(`{"v":"lap-scope-v0","act":"finance:pay","res":%q,"cap":{"max_per_tx":%d,"max_cumulative":%d,"unit":"EUR-cent","window":"utc_day"},"cp":{"allow":[%q],"deny":[]},"depth":%d`,
		res, perTx, perDay, w.agent.DID(), depth)
	if decay > 0 {
		s += fmt.Sprintf(`,"decay_max_sec":%d`, decay)
	}
	return s + "}"
}

// installPolicy trusts P for action:pay within bank://acme/accounts/**, 1000 per
// action and 5000 a day, beside the usual action:hold rule for Alice.
func (w *envWorld) installPolicy() {
	w.t.Helper()
	o := w.sign(w.owner, PurposePolicy, map[string]any{
		"agent": w.agent.DID().String(),
		"rules": []map[string]any{
			{"action": "action:hold", "unit": "EUR-cent", "perActionCap": 5000,
				"counterparties": []string{w.alice.DID().String()}},
			{"action": "action:pay", "principal": w.p.DID().String(),
				"scope": json.RawMessage(w.scopeJSON("bank://acme/accounts/**", 1000, 5000, 2, 0))},
		},
	}, 48*time.Hour)
	if _, err := w.control(o); err != nil {
		w.t.Fatalf("installing policy: %v", err)
	}
}

// passport issues a passport from iss to sub for aud granting scope.
func (w *envWorld) passport(iss, sub *did.PrivateKey, aud string, ttl time.Duration, scope string) string {
	w.t.Helper()
	env, err := envelope.ParseEnvelope([]byte("[" + scope + "]"))
	if err != nil {
		w.t.Fatal(err)
	}
	now := w.clock.Now().Unix()
	tok, err := envelope.Issue(iss, envelope.Claims{Iss: iss.DID().String(), Sub: sub.DID().String(), Aud: aud,
		Iat: now, Exp: now + int64(ttl/time.Second), Envelope: env})
	if err != nil {
		w.t.Fatal(err)
	}
	return tok
}

// chain is P→A→B for this agent; leaf is B's scope.
func (w *envWorld) chain(leaf string) []string {
	aud := w.agent.DID().String()
	return []string{
		w.passport(w.p, w.a, aud, 15*time.Minute, w.scopeJSON("bank://acme/**", 1000, 2000, 1, 0)),
		w.passport(w.a, w.b, aud, 15*time.Minute, leaf),
	}
}

func (w *envWorld) leaf() string { return w.scopeJSON("bank://acme/accounts/**", 500, 800, 0, 0) }

// pay is an action:pay from sender presenting chain (nil: no envelope).
func (w *envWorld) pay(from *did.PrivateKey, chain []string, act, res string, amount int64) Action {
	w.t.Helper()
	w.seq++
	a := w.action(from, "action:pay", map[string]any{"act": act, "res": res, "amount": amount,
		"unit": "EUR-cent", "idempotencyKey": fmt.Sprintf("pay-%d", w.seq)})
	if chain != nil {
		a.Envelope = &Presented{Chain: chain, Sender: from.DID().String()}
	}
	return a
}

const acct = "bank://acme/accounts/7"

func TestEnvelopeRunsWithinScope(t *testing.T) {
	w := newEnvWorld(t)
	w.installPolicy()
	ch := w.chain(w.leaf())
	w.restart() // the policy's principal and scope persist
	want(t, "in cap", w.decide(w.pay(w.b, ch, "finance:pay", acct, 300)), Run, "envelope")
	want(t, "sub-verb", w.decide(w.pay(w.b, ch, "finance:pay:escrow", acct, 100)), Run, "envelope")
	want(t, "over the leaf's max_per_tx", w.decide(w.pay(w.b, ch, "finance:pay", acct, 600)), Hold, "envelope-over-cap")
	want(t, "outside res", w.decide(w.pay(w.b, ch, "finance:pay", "bank://acme/accounts", 10)), Hold, "envelope-scope")
	want(t, "other host", w.decide(w.pay(w.b, ch, "finance:pay", "bank://evil/accounts/7", 10)), Hold, "envelope-scope")
	want(t, "wildcard res", w.decide(w.pay(w.b, ch, "finance:pay", "bank://acme/accounts/*", 10)), Hold, "envelope-scope")
	want(t, "wrong act", w.decide(w.pay(w.b, ch, "data:write", acct, 10)), Hold, "envelope-scope")
	want(t, "no act", w.decide(w.pay(w.b, ch, "", acct, 10)), Hold, "envelope-scope")
	a := w.pay(w.b, ch, "finance:pay", acct, 10)
	a.Unit = "USD-cent"
	want(t, "other unit", w.decide(a), Hold, "envelope-amount")
	want(t, "wrong holder", w.decide(w.pay(w.alice, ch, "finance:pay", acct, 10)), Hold, "envelope-holder")
	a = w.pay(w.b, ch, "finance:pay", acct, 10)
	a.Envelope.Sender = w.alice.DID().String()
	want(t, "relayed by another sender", w.decide(a), Hold, "envelope-holder")
	// A held action's reason is kept with the hold.
	w.db.View(func(tx *bolt.Tx) error {
		hs, err := w.g.Holds(tx)
		if err != nil || len(hs) != 9 {
			t.Fatalf("%d holds, %v; want 9", len(hs), err)
		}
		for _, h := range hs {
			if h.Action.Key == "pay-3" && (h.Reason != "envelope-over-cap" || h.Action.Envelope == nil || len(h.Action.Envelope.Chain) != 2) {
				t.Errorf("hold of pay-3 = %+v", h)
			}
		}
		return nil
	})
}

func TestEnvelopeBudgetAcrossActions(t *testing.T) {
	w := newEnvWorld(t)
	w.installPolicy()
	ch := w.chain(w.leaf())
	want(t, "first", w.decide(w.pay(w.b, ch, "finance:pay", acct, 500)), Run, "envelope")
	want(t, "beyond the leaf's 800 a day", w.decide(w.pay(w.b, ch, "finance:pay", acct, 400)), Hold, "envelope-budget")
	want(t, "what is left", w.decide(w.pay(w.b, ch, "finance:pay", acct, 300)), Run, "envelope")
	// Another passport for B is counted on its own (conservation across
	// siblings is the issuer's), but the rule's scope (5000 a day) bounds
	// them all.
	w.clock.Advance(time.Second)
	ch2 := w.chain(w.scopeJSON("bank://acme/accounts/**", 500, 1000, 0, 0))
	for i := range 2 {
		want(t, fmt.Sprintf("second passport %d", i), w.decide(w.pay(w.b, ch2, "finance:pay", acct, 500)), Run, "envelope")
	}
	want(t, "second passport spent", w.decide(w.pay(w.b, ch2, "finance:pay", acct, 1)), Hold, "envelope-budget")
	// The next UTC day's window is fresh (the chain is reissued: 15 min).
	w.clock.Advance(24 * time.Hour)
	want(t, "next day", w.decide(w.pay(w.b, w.chain(w.leaf()), "finance:pay", acct, 500)), Run, "envelope")
}

func TestEnvelopeRuleScopeBounds(t *testing.T) {
	w := newEnvWorld(t)
	w.installPolicy()
	// The owner's rule scope allows 1000 per action; this chain is
	// self-consistent but its principal grants more than the owner does.
	aud := w.agent.DID().String()
	wide := w.scopeJSON("bank://acme/**", 3000, 9000, 1, 0)
	ch := []string{w.passport(w.p, w.b, aud, time.Hour, wide)}
	want(t, "over the rule's cap", w.decide(w.pay(w.b, ch, "finance:pay", acct, 2000)), Hold, "envelope-over-cap")
	want(t, "outside the rule's res", w.decide(w.pay(w.b, ch, "finance:pay", "bank://acme/admin/x", 10)), Hold, "envelope-scope")
	want(t, "within both", w.decide(w.pay(w.b, ch, "finance:pay", acct, 1000)), Run, "envelope")
}

func TestEnvelopeChainFailures(t *testing.T) {
	w := newEnvWorld(t)
	w.installPolicy()
	aud := w.agent.DID().String()
	pa := w.passport(w.p, w.a, aud, 15*time.Minute, w.scopeJSON("bank://acme/**", 1000, 2000, 1, 0))
	tampered := w.chain(w.leaf())
	tampered[1] = tampered[1][:len(tampered[1])-2] + "AA"
	notMe := []string{w.passport(w.p, w.a, "did:key:z6MkOther", time.Hour, w.leaf()), w.passport(w.a, w.b, "did:key:z6MkOther", time.Hour, w.leaf())}
	tests := []struct {
		name   string
		chain  []string
		reason string
	}{
		{"bad signature", tampered, "envelope-signature"},
		{"wrong aud", notMe, "envelope-audience"},
		{"broken chain", []string{pa, w.passport(w.q, w.b, aud, time.Hour, w.leaf())}, "envelope-broken-chain"},
		{"widened child", []string{pa, w.passport(w.a, w.b, aud, time.Hour, w.scopeJSON("bank://acme/**", 2000, 2000, 0, 0))}, "envelope-widened"},
		{"no rule for principal", []string{w.passport(w.q, w.b, aud, time.Hour, w.leaf())}, "envelope-principal"},
		{"not a passport", []string{"x.y"}, "envelope-malformed"},
	}
	for _, tt := range tests {
		want(t, tt.name, w.decide(w.pay(w.b, tt.chain, "finance:pay", acct, 10)), Hold, tt.reason)
	}
	a := w.pay(w.b, nil, "finance:pay", acct, 10)
	a.Envelope = &Presented{Malformed: "metadata is not a chain"}
	want(t, "malformed presentation", w.decide(a), Hold, "envelope-malformed")
	// Expiry is judged at the decision's time, the trusted time.
	ch := w.chain(w.leaf())
	late := w.pay(w.b, ch, "finance:pay", acct, 10)
	var d Decision
	w.db.Update(func(tx *bolt.Tx) (err error) {
		d, err = w.g.DecideAt(tx, late, w.clock.Now().Add(15*time.Minute))
		return err
	})
	want(t, "expired at the trusted time", d, Hold, "envelope-expired")
	w.clock.Advance(15 * time.Minute)
	want(t, "expired", w.decide(w.pay(w.b, ch, "finance:pay", acct, 10)), Hold, "envelope-expired")
}

func TestEnvelopeLiveness(t *testing.T) {
	w := newEnvWorld(t)
	w.installPolicy()
	ch := w.chain(w.scopeJSON("bank://acme/accounts/**", 500, 800, 0, 600))
	doc := func(k *did.PrivateKey, at time.Time) []byte {
		d, err := pulse.Sign(k, pulse.Pulse{Agent: k.DID(), Seq: 1, At: at, Mode: "always_on"})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	withPulse := func(d []byte) Action {
		a := w.pay(w.b, ch, "finance:pay", acct, 10)
		a.Envelope.Pulse = d
		return a
	}
	w.clock.Advance(5 * time.Minute)
	want(t, "no pulse", w.decide(withPulse(nil)), Hold, "envelope-stale-pulse")
	want(t, "someone else's pulse", w.decide(withPulse(doc(w.a, t0))), Hold, "envelope-stale-pulse")
	want(t, "a pulse 11 min old", w.decide(withPulse(doc(w.b, t0.Add(-6*time.Minute)))), Hold, "envelope-stale-pulse")
	want(t, "a pulse from the future", w.decide(withPulse(doc(w.b, t0.Add(time.Hour)))), Hold, "envelope-stale-pulse")
	forged := doc(w.b, t0)
	forged = []byte(strings.Replace(string(forged), `"seq":1`, `"seq":2`, 1))
	want(t, "a forged pulse", w.decide(withPulse(forged)), Hold, "envelope-stale-pulse")
	want(t, "a pulse 5 min old", w.decide(withPulse(doc(w.b, t0))), Run, "envelope")
}

func TestEnvelopeRulesNeedAChain(t *testing.T) {
	w := newEnvWorld(t)
	w.installPolicy()
	// Without a presented chain, a rule with a principal never matches,
	// not even for the holder, and the other rules behave as before.
	want(t, "no chain", w.decide(w.pay(w.b, nil, "finance:pay", acct, 10)), Hold, "no-rule")
	want(t, "no chain, principal itself", w.decide(w.pay(w.p, nil, "finance:pay", acct, 10)), Hold, "no-rule")
	want(t, "counterparty rule", w.decide(w.action(w.alice, "action:hold", map[string]any{"amount": 10, "unit": "EUR-cent"})), Run, "policy")
	// A chain presented for a purpose no principal rule covers is held.
	a := w.action(w.b, "action:hold", map[string]any{"amount": 10, "unit": "EUR-cent", "act": "finance:pay", "res": acct})
	a.Envelope = &Presented{Chain: w.chain(w.leaf()), Sender: w.b.DID().String()}
	want(t, "chain for another purpose", w.decide(a), Hold, "envelope-principal")
}

func TestPrincipalRuleParsing(t *testing.T) {
	w := newEnvWorld(t)
	scope := json.RawMessage(w.scopeJSON("bank://acme/**", 1000, 5000, 2, 0))
	for name, rule := range map[string]map[string]any{
		"principal without scope": {"action": "action:pay", "principal": w.p.DID().String()},
		"scope without principal": {"action": "action:pay", "scope": scope, "counterparties": []string{w.alice.DID().String()}},
		"with counterparties": {"action": "action:pay", "principal": w.p.DID().String(), "scope": scope,
			"counterparties": []string{w.alice.DID().String()}},
		"bad principal": {"action": "action:pay", "principal": "did:web:x", "scope": scope},
		"bad scope":     {"action": "action:pay", "principal": w.p.DID().String(), "scope": json.RawMessage(`{"v":"lap-scope-v9"}`)},
	} {
		o := w.sign(w.owner, PurposePolicy, map[string]any{"agent": w.agent.DID().String(), "rules": []any{rule}}, time.Hour)
		if _, err := w.control(o); !errors.Is(err, ErrBadPolicy) {
			t.Errorf("%s: err = %v, want ErrBadPolicy", name, err)
		}
	}
}

// TestSpentBudgetsAreSwept: a budget record stops counting when its window
// ends or its passport expires, and is removed from the flash then; the
// rule scope's record of the day in force stays.
func TestSpentBudgetsAreSwept(t *testing.T) {
	w := newEnvWorld(t)
	w.installPolicy()
	want(t, "first passport", w.decide(w.pay(w.b, w.chain(w.leaf()), "finance:pay", acct, 100)), Run, "envelope")
	w.clock.Advance(time.Second)
	want(t, "second passport", w.decide(w.pay(w.b, w.chain(w.leaf()), "finance:pay", acct, 100)), Run, "envelope")
	if n := w.budgetRecords(); n != 3 {
		t.Fatalf("%d budget records after a day's two passports, want 3 (the rule scope's, one per leaf)", n)
	}
	w.clock.Advance(24 * time.Hour)
	want(t, "next day", w.decide(w.pay(w.b, w.chain(w.leaf()), "finance:pay", acct, 100)), Run, "envelope")
	if n := w.budgetRecords(); n != 2 {
		t.Fatalf("%d budget records the next day, want 2: yesterday's passports' records swept", n)
	}
}

func (w *envWorld) budgetRecords() (n int) {
	w.t.Helper()
	if err := w.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketBudget).Stats().KeyN
		return nil
	}); err != nil {
		w.t.Fatal(err)
	}
	return n
}
