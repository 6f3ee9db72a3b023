// Package gate is the agent's action gate: it decides whether an accepted
// object whose purpose is consequential may run now, must wait for the
// owner, or must not run at all.
//
// The offline profile forbids consequential side effects "solely because a
// message was dequeued after wake"; the draft's purpose registry says a
// purpose alone is never permission for them. So purposes the configuration
// marks consequential (for example action:*) never run automatically. They
// are held, durably, until the owner confirms or denies them, unless a
// policy the owner signed allows that action unsupervised. The policy is
// the Autonomy Envelope proposal's envelope: a Governed Object with purpose
// torpor:policy, issued by the owner's DID (checked with package governed
// like any other object), listing per action a cap per action, a budget per
// window, the counterparties it covers and those it never covers, and
// valid until the object's expiry.
//
// # Decisions
//
// Decide returns, for one action, in this order of checks:
//
//  1. Pass: the purpose is not consequential; deliver it as usual.
//  2. Refuse: the idempotency key already completed (the stored receipt
//     is the answer), is indeterminate (only an operator's reconcile
//     resolves it; see store/ledger), is in flight, or is already held.
//  3. Hold (halted): the owner's halt is in force.
//  4. Hold (needs-confirmation): no policy in force, no rule for the
//     action, counterparty not covered, amount missing, in another unit,
//     above the cap, or beyond what is left of the window's budget.
//  5. Hold (suspended): the rule's policy conditions authority on
//     liveness and the agent's latest pulse is older than its decayMaxSec.
//  6. Run: the key is reserved in the ledger and the amount charged to
//     the budget, in the caller's transaction; the caller runs the effect
//     only after that transaction committed.
//
// An action whose message presented an Autonomy Envelope (a passport
// chain) is judged at 4 and 5 by the policy's rules that name a principal
// instead, with the envelope-* reasons of envelope.go; the rules that list
// counterparties only judge actions presented without one.
//
// # Halt, suspension, resume
//
// The owner's halt (Halt) is immediate and total for autonomous action:
// from then on every consequential action is held, and the runtime cancels
// effects in flight. A pulse never lifts it; only Resume does. Suspension
// for lost liveness is prospective only: it holds actions not yet started
// (never touches one in flight) and lifts by itself when a fresh pulse is
// recorded (the runtime calls Redecide). After Resume or a fresh pulse,
// Redecide runs the held actions through Decide again; those the policy now
// allows run, the rest stay held for the owner.
//
// Owner confirmation is supervision, not autonomy: a confirmed action runs
// even while halted and does not draw on a policy's budget. It still goes
// through the idempotency ledger, so a confirmed action never runs twice.
//
// The runtime's own actions that need the owner (an update whose target
// says so, docs/updates.md) are held with Hold and OwnerOnly set: listed,
// confirmed, denied and expired like the others, never run by a policy.
//
// Budgets are counted in fixed windows aligned to the Unix epoch (a day
// window resets at 00:00 UTC), per policy and rule, in bbolt; a new policy
// starts with fresh budgets.
package gate

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/governed/envelope"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/store/ledger"
)

var (
	bucketGate   = []byte("gate")
	bucketHolds  = []byte("gate-holds")
	bucketBudget = []byte("gate-budget")
	keyPolicy    = []byte("policy")
	keyHalt      = []byte("halt")
)

// Config configures a Gate.
type Config struct {
	// Owner signs policies, confirmations and halts. The zero DID means no
	// owner: nothing can be allowed unsupervised or confirmed remotely
	// (operators still confirm locally).
	Owner did.DID
	// Agent is the agent's own DID; policies must name it.
	Agent did.DID
	// Consequential lists the purposes that never run automatically.
	Consequential purpose.Set
	// Liveness returns the time of the agent's latest pulse, read in tx
	// (false before the first). Nil means no pulses: every policy with a
	// liveness condition stays suspended.
	Liveness func(tx *bolt.Tx) (time.Time, bool, error)
	// Clock is the wall clock. Nil means clock.Real.
	Clock clock.Clock
}

// Gate decides consequential actions. Its state (policy, halt, holds,
// budgets) lives in bbolt, next to the ledger whose keys it reserves.
type Gate struct {
	cfg    Config
	ledger *ledger.Ledger
	clock  clock.Clock
	reg    envelope.Registry // the action registry presented envelopes use

	// nextSweep is when sweepBudgets next looks at the budget records;
	// only touched in write transactions, which bbolt runs one at a time.
	nextSweep time.Time
}

// Open prepares the gate's buckets in the ledger's bbolt file.
func Open(l *ledger.Ledger, cfg Config) (*Gate, error) {
	for _, p := range cfg.Consequential {
		if err := purpose.CheckPattern(p); err != nil {
			return nil, err
		}
	}
	err := l.DB().Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketGate, bucketHolds, bucketBudget} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("gate: opening: %w", err)
	}
	return &Gate{cfg: cfg, ledger: l, clock: clock.Or(cfg.Clock), reg: envelope.RegistryV0()}, nil
}

// Consequential reports whether purpose p is gated.
func (g *Gate) Consequential(p string) bool { return g.cfg.Consequential.Match(p) }

// Action is a consequential request taken from an accepted object.
type Action struct {
	Purpose      string
	Counterparty string // the object's issuer DID
	ObjectID     string
	// Key is the idempotency key: the payload's idempotencyKey, else the
	// object id (see ActionOf).
	Key string
	// Amount and Unit come from the payload; HasAmount is false when it
	// states none.
	Amount    int64
	Unit      string
	HasAmount bool
	// Expires is the object's effective expiry; a hold is dropped then.
	Expires time.Time
	// Payload is kept with a hold and given back when it runs (the
	// runtime stores the delivery it will hand to the application).
	Payload []byte
	// Act and Res are the payload's "act" and "res": the envelope verb
	// (governed/envelope's registry) and the concrete resource an action
	// presented under an Autonomy Envelope names (see envelope.go).
	Act string `cbor:",omitempty"`
	Res string `cbor:",omitempty"`
	// Envelope is the passport chain the message presented, nil when it
	// presented none (see envelope.go).
	Envelope *Presented `cbor:",omitempty"`
	// OwnerOnly marks an action only the owner's confirmation runs (see
	// Hold): Redecide never releases it, whatever the policy allows.
	OwnerOnly bool `cbor:",omitempty"`
}

// LedgerKey returns the ledger key of a: the counterparty and the
// idempotency key, so two senders cannot collide.
func (a Action) LedgerKey() string { return a.Counterparty + " " + a.Key }

// Verdict is what Decide says about an action.
type Verdict uint8

const (
	// Pass: not consequential.
	Pass Verdict = iota + 1
	// Run: allowed; the key is reserved in the caller's transaction.
	Run
	// Hold: kept durably until the owner confirms or denies, or a policy
	// allows it on Redecide.
	Hold
	// Refuse: must not run (duplicate, indeterminate, in flight, held).
	Refuse
)

func (v Verdict) String() string {
	switch v {
	case Pass:
		return "pass"
	case Run:
		return "run"
	case Hold:
		return "hold"
	case Refuse:
		return "refuse"
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// Decision is Decide's answer.
type Decision struct {
	Verdict Verdict
	// Reason says why, for operators: "halted", "needs-confirmation",
	// "no-rule", "counterparty", "amount-missing", "unit", "over-cap",
	// "budget", "suspended", "policy" (allowed by the policy),
	// "completed", "indeterminate", "in-flight", "held"; for an action
	// presented under an Autonomy Envelope, "envelope" (allowed) or one of
	// the envelope-* reasons (see envelope.go).
	Reason string
	// Entry is the ledger entry of a refused key (with the stored receipt
	// when completed).
	Entry ledger.Entry
}

// Decide decides action a in tx at the clock's time (see DecideAt).
func (g *Gate) Decide(tx *bolt.Tx, a Action) (Decision, error) {
	return g.DecideAt(tx, a, g.clock.Now())
}

// DecideAt decides action a in tx (see the package documentation for the
// order of checks), judging every expiry, window and pulse age at now: the
// drain passes the trusted time it judges the batch's expiry by. On Run
// the key is reserved and the budgets charged in tx; on Hold the action is
// stored in tx. The caller commits tx before it acts on the decision.
func (g *Gate) DecideAt(tx *bolt.Tx, a Action, now time.Time) (Decision, error) {
	if !g.Consequential(a.Purpose) {
		return Decision{Verdict: Pass}, nil
	}
	if d, refused, err := g.refused(tx, a); err != nil || refused {
		return d, err
	}
	reason, charges, err := g.evaluate(tx, a, now)
	if err != nil {
		return Decision{}, err
	}
	if !allowed(reason) {
		return Decision{Verdict: Hold, Reason: reason}, g.putHold(tx, a, reason)
	}
	if err := g.run(tx, a, charges...); err != nil {
		return Decision{}, err
	}
	return Decision{Verdict: Run, Reason: reason}, g.sweepBudgets(tx, now)
}

// allowed reports whether an evaluate reason lets the action run.
func allowed(reason string) bool { return reason == "policy" || reason == ReasonEnvelope }

// refused checks the ledger and the holds for a's key.
func (g *Gate) refused(tx *bolt.Tx, a Action) (Decision, bool, error) {
	e, err := g.ledger.Get(tx, a.LedgerKey())
	switch {
	case err == nil && e.State == ledger.Completed:
		return Decision{Verdict: Refuse, Reason: "completed", Entry: e}, true, nil
	case err == nil && e.State == ledger.Indeterminate:
		return Decision{Verdict: Refuse, Reason: "indeterminate", Entry: e}, true, nil
	case err == nil && e.State == ledger.Reserved:
		return Decision{Verdict: Refuse, Reason: "in-flight", Entry: e}, true, nil
	case err != nil && !isNotFound(err):
		return Decision{}, false, err
	}
	if tx.Bucket(bucketHolds).Get([]byte(a.LedgerKey())) != nil {
		return Decision{Verdict: Refuse, Reason: "held"}, true, nil
	}
	return Decision{}, false, nil
}

// charge is a budget debit to make when an action runs.
type charge struct {
	key    []byte // budget bucket key; nil for none
	window time.Time
	amount int64
	limit  int64     // the budget (for an envelope scope's; evaluate checks it)
	until  time.Time // when the record can no longer count (zero: never)
}

// evaluate returns "policy" (or "envelope") and the budget charges when a
// policy allows a unsupervised at now, or the reason it does not. An action
// presented under an envelope is judged by the rules that name a principal
// (evaluateEnvelope); any other by the rules that list counterparties.
func (g *Gate) evaluate(tx *bolt.Tx, a Action, now time.Time) (string, []charge, error) {
	h, err := g.halt(tx)
	if err != nil || h.Halted {
		return "halted", nil, err
	}
	p, ok, err := g.policy(tx)
	if err != nil || !ok || !now.Before(p.Expires) {
		return "needs-confirmation", nil, err
	}
	if a.Envelope != nil {
		return g.evaluateEnvelope(tx, a, &p, now)
	}
	i, r := p.rule(a.Purpose)
	switch {
	case r == nil:
		return "no-rule", nil, nil
	case !r.covers(a.Counterparty):
		return "counterparty", nil, nil
	}
	reason, c, err := g.bounds(tx, a, &p, i, now)
	return reason, []charge{c}, err
}

// bounds applies rule i of p's unit, cap, liveness condition and budget to
// a at now: "policy" and the budget charge when a is within them.
func (g *Gate) bounds(tx *bolt.Tx, a Action, p *Policy, i int, now time.Time) (string, charge, error) {
	r := &p.Rules[i]
	switch {
	case (r.Cap > 0 || r.Budget > 0) && !a.HasAmount:
		return "amount-missing", charge{}, nil
	case r.Unit != "" && a.HasAmount && a.Unit != r.Unit:
		return "unit", charge{}, nil
	case r.Cap > 0 && a.Amount > r.Cap:
		return "over-cap", charge{}, nil
	}
	if suspended, err := g.suspended(tx, p, now); err != nil || suspended {
		return "suspended", charge{}, err
	}
	if r.Budget <= 0 {
		return "policy", charge{}, nil
	}
	w := now.Truncate(r.Window)
	c := charge{key: budgetKey(p.ID, i), window: w, amount: a.Amount, until: w.Add(r.Window)}
	spent := g.spent(tx, c)
	if spent > r.Budget || a.Amount > r.Budget-spent {
		return "budget", charge{}, nil
	}
	return "policy", c, nil
}

// suspended reports whether p's liveness condition fails at now.
func (g *Gate) suspended(tx *bolt.Tx, p *Policy, now time.Time) (bool, error) {
	if p.DecayMax <= 0 {
		return false, nil
	}
	if g.cfg.Liveness == nil {
		return true, nil
	}
	last, ok, err := g.cfg.Liveness(tx)
	if err != nil || !ok {
		return true, err
	}
	return clockSince(now, last) > p.DecayMax, nil
}

// clockSince is now-t on the wall clock, with monotonic readings stripped.
func clockSince(now, t time.Time) time.Duration { return now.Round(0).Sub(t.Round(0)) }

// run reserves a's key and charges the budgets in tx.
func (g *Gate) run(tx *bolt.Tx, a Action, cs ...charge) error {
	if err := g.ledger.Reserve(tx, ledger.Reservation{
		Key: a.LedgerKey(), Action: a.Purpose, Counterparty: a.Counterparty,
	}); err != nil {
		return err
	}
	for _, c := range cs {
		if c.key == nil {
			continue
		}
		if err := putBudget(tx, c, g.spent(tx, c)+c.amount); err != nil {
			return err
		}
	}
	return nil
}

// budget is the bbolt record of one rule's spending. Until (Unix seconds,
// 0 for never) is when it stops counting: the end of its window, or the
// expiry of the passport it counts for; sweepBudgets removes it then.
// Records written before Until existed have none.
type budget struct {
	Window time.Time `cbor:"1,keyasint"`
	Spent  int64     `cbor:"2,keyasint"`
	Until  int64     `cbor:"3,keyasint,omitempty"`
}

func budgetKey(policyID string, rule int) []byte {
	return binary.BigEndian.AppendUint32([]byte(policyID+"\x00"), uint32(rule))
}

// spent returns what c's rule has spent in c's window.
func (g *Gate) spent(tx *bolt.Tx, c charge) int64 {
	var b budget
	v := tx.Bucket(bucketBudget).Get(c.key)
	if v == nil || cbor.Unmarshal(v, &b) != nil || !b.Window.Equal(c.window) {
		return 0
	}
	return b.Spent
}

func putBudget(tx *bolt.Tx, c charge, spent int64) error {
	b := budget{Window: c.window, Spent: spent}
	if !c.until.IsZero() {
		b.Until = c.until.Unix()
	}
	v, err := encMode.Marshal(b)
	if err != nil {
		return err
	}
	return tx.Bucket(bucketBudget).Put(c.key, v)
}

// Spent returns how much the rule covering action has spent in the current
// window of the policy in force (0 when none), for status displays.
func (g *Gate) Spent(tx *bolt.Tx, action string) (spent, budget int64, err error) {
	p, ok, err := g.policy(tx)
	if err != nil || !ok {
		return 0, 0, err
	}
	i, r := p.rule(action)
	if r == nil || r.Budget <= 0 {
		return 0, 0, nil
	}
	c := charge{key: budgetKey(p.ID, i), window: g.clock.Now().Truncate(r.Window)}
	return g.spent(tx, c), r.Budget, nil
}

var encMode, _ = cbor.EncOptions{Time: cbor.TimeUnixMicro}.EncMode()

// ActionOf builds the Action of an accepted object. The payload may carry
// "idempotencyKey" (a string; default the object id), "amount" (an integer,
// or a string of digits, in minor units), "unit" (a string), and, for an
// action presented under an Autonomy Envelope, "act" and "res" (strings;
// see envelope.go). payload is what a hold keeps for the runtime.
func ActionOf(o *governed.Object, payload []byte) (Action, error) {
	a := Action{Purpose: o.Governance.Purpose, Counterparty: o.Issuer.String(), ObjectID: o.ID,
		Key: o.ID, Payload: payload}
	if exp, ok := o.Expiry(); ok {
		a.Expires = exp
	}
	var pl actionPayload
	if err := decodeJSON(o.Payload, &pl); err != nil {
		return Action{}, fmt.Errorf("gate: action payload: %v", err)
	}
	if pl.IdempotencyKey != "" {
		a.Key = pl.IdempotencyKey
	}
	if pl.Amount != "" {
		v, err := amount(pl.Amount)
		if err != nil {
			return Action{}, fmt.Errorf("gate: action amount: %v", err)
		}
		a.Amount, a.HasAmount = v, true
	}
	a.Unit, a.Act, a.Res = pl.Unit, pl.Act, pl.Res
	if len(a.LedgerKey()) > ledger.MaxKeyLen {
		return Action{}, fmt.Errorf("gate: idempotency key of %d bytes is too long", len(a.Key))
	}
	return a, nil
}

// budgetSweepEvery is how often, in the decision clock's time, a run
// action's transaction also removes the budget records that stopped
// counting.
const budgetSweepEvery = time.Hour

// sweepBudgets removes, in tx, every budget record whose Until has passed
// at now: a window that ended or a passport that expired can never be
// charged again, and a device that takes passports for years would
// otherwise keep one record per passport and window on its flash. It
// looks at most once per budgetSweepEvery.
func (g *Gate) sweepBudgets(tx *bolt.Tx, now time.Time) error {
	if now.Before(g.nextSweep) {
		return nil
	}
	g.nextSweep = now.Add(budgetSweepEvery)
	var dead [][]byte
	err := tx.Bucket(bucketBudget).ForEach(func(k, v []byte) error {
		var b budget
		if cbor.Unmarshal(v, &b) == nil && b.Until != 0 && b.Until <= now.Unix() {
			dead = append(dead, bytes.Clone(k)) // k lives in pages Delete may change
		}
		return nil
	})
	for _, k := range dead {
		if err == nil {
			err = tx.Bucket(bucketBudget).Delete(k)
		}
	}
	return err
}
