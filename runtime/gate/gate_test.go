package gate

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/ledger"
)

var t0 = time.Date(2026, 1, 15, 14, 0, 0, 0, time.UTC)

func key(t testing.TB, last byte) *did.PrivateKey { t.Helper(); return didtest.Key(t, last) }

type env struct {
	t                   testing.TB
	path                string
	clock               *clocktest.Clock
	db                  *bolt.DB
	l                   *ledger.Ledger
	g                   *Gate
	owner, agent, alice *did.PrivateKey
	bob                 *did.PrivateKey
	lastPulse           time.Time
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, path: filepath.Join(t.TempDir(), "agent.db"), clock: clocktest.New(t0),
		owner: key(t, 9), agent: key(t, 8), alice: key(t, 1), bob: key(t, 2)}
	e.lastPulse = t0
	e.open()
	t.Cleanup(func() { e.db.Close() })
	return e
}

func (e *env) open() {
	e.t.Helper()
	db, err := store.Open(e.path, &store.Options{NoSync: true})
	if err != nil {
		e.t.Fatal(err)
	}
	l, err := ledger.Open(db, &ledger.Options{Clock: e.clock})
	if err != nil {
		e.t.Fatal(err)
	}
	g, err := Open(l, Config{
		Owner: e.owner.DID(), Agent: e.agent.DID(), Consequential: purpose.Set{"action:*"}, Clock: e.clock,
		Liveness: func(*bolt.Tx) (time.Time, bool, error) { return e.lastPulse, !e.lastPulse.IsZero(), nil },
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.db, e.l, e.g = db, l, g
}

func (e *env) restart() {
	e.t.Helper()
	e.db.Close()
	e.open()
}

func (e *env) sign(k *did.PrivateKey, p string, payload any, ttl time.Duration) *governed.Object {
	e.t.Helper()
	o, err := governed.Sign(k, governed.Template{
		IssuedAt: e.clock.Now(), Semantic: governed.Semantic{Schema: "https://torpor.dev/schema/test"},
		Payload: payload, Purpose: p, TTL: ttl,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return o
}

func (e *env) action(from *did.PrivateKey, p string, payload map[string]any) Action {
	e.t.Helper()
	if payload == nil {
		payload = map[string]any{}
	}
	o := e.sign(from, p, payload, time.Hour)
	a, err := ActionOf(o, []byte("delivery"))
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

func (e *env) decide(a Action) Decision {
	e.t.Helper()
	var d Decision
	err := e.db.Update(func(tx *bolt.Tx) error {
		var err error
		d, err = e.g.Decide(tx, a)
		return err
	})
	if err != nil {
		e.t.Fatalf("Decide: %v", err)
	}
	return d
}

func (e *env) control(o *governed.Object) (ControlResult, error) {
	e.t.Helper()
	var res ControlResult
	err := e.db.Update(func(tx *bolt.Tx) error {
		var err error
		res, err = e.g.Control(tx, o, e.clock.Now())
		return err
	})
	return res, err
}

// policy installs a policy allowing action:hold for Alice, up to 5000 per
// action and 8000 a day, suspending after two hours without a pulse.
func (e *env) policy(ttl time.Duration) {
	e.t.Helper()
	o := e.sign(e.owner, PurposePolicy, map[string]any{
		"agent": e.agent.DID().String(), "decayMaxSec": 7200,
		"rules": []map[string]any{{
			"action": "action:hold", "unit": "EUR-cent", "perActionCap": "5000", "budget": 8000,
			"windowSec": 86400, "counterparties": []string{e.alice.DID().String(), e.bob.DID().String()},
			"deny": []string{e.bob.DID().String()},
		}},
	}, ttl)
	if _, err := e.control(o); err != nil {
		e.t.Fatalf("installing policy: %v", err)
	}
}

func (e *env) complete(a Action) {
	e.t.Helper()
	if err := e.db.Update(func(tx *bolt.Tx) error { return e.l.Complete(tx, a.LedgerKey(), []byte("done"), "") }); err != nil {
		e.t.Fatal(err)
	}
}

func want(t testing.TB, what string, d Decision, v Verdict, reason string) {
	t.Helper()
	if d.Verdict != v || d.Reason != reason {
		t.Fatalf("%s: decision %v (%s), want %v (%s)", what, d.Verdict, d.Reason, v, reason)
	}
}

func TestNoPolicyHoldsUntilConfirmed(t *testing.T) {
	e := newEnv(t)
	want(t, "comms", e.decide(e.action(e.alice, "comms:message", nil)), Pass, "")
	a := e.action(e.alice, "action:capture", map[string]any{"amount": 100, "unit": "EUR-cent"})
	want(t, "no policy", e.decide(a), Hold, "needs-confirmation")
	e.restart() // holds are durable
	want(t, "again while held", e.decide(a), Refuse, "held")

	res, err := e.control(e.sign(e.owner, PurposeConfirm, map[string]any{"hold": a.LedgerKey()}, time.Hour))
	if err != nil || len(res.Run) != 1 || res.Run[0].Action.ObjectID != a.ObjectID || string(res.Run[0].Action.Payload) != "delivery" {
		t.Fatalf("confirm = %+v, %v", res, err)
	}
	want(t, "in flight", e.decide(a), Refuse, "in-flight")
	e.complete(a)
	d := e.decide(a)
	want(t, "after completion", d, Refuse, "completed")
	if string(d.Entry.Receipt) != "done" {
		t.Errorf("refusal carries receipt %q, want the stored one", d.Entry.Receipt)
	}
	if _, err := e.control(e.sign(e.owner, PurposeConfirm, map[string]any{"hold": a.LedgerKey()}, time.Hour)); !errors.Is(err, ErrNoHold) {
		t.Fatalf("second confirm: err = %v, want ErrNoHold", err)
	}
}

func TestPolicyBounds(t *testing.T) {
	e := newEnv(t)
	e.policy(48 * time.Hour)
	hold := func(amount any, from *did.PrivateKey, extra ...string) Action {
		pl := map[string]any{"unit": "EUR-cent"}
		if amount != nil {
			pl["amount"] = amount
		}
		if len(extra) > 0 {
			pl["unit"] = extra[0]
		}
		return e.action(from, "action:hold", pl)
	}
	tests := []struct {
		name   string
		a      Action
		v      Verdict
		reason string
	}{
		{"within cap", hold(4000, e.alice), Run, "policy"},
		{"over cap", hold("5001", e.alice), Hold, "over-cap"},
		{"no amount", hold(nil, e.alice), Hold, "amount-missing"},
		{"other unit", hold(10, e.alice, "USD-cent"), Hold, "unit"},
		{"denied counterparty", hold(10, e.bob), Hold, "counterparty"},
		{"unlisted counterparty", hold(10, e.owner), Hold, "counterparty"},
		{"no rule", e.action(e.alice, "action:capture", map[string]any{"amount": 1, "unit": "EUR-cent"}), Hold, "no-rule"},
		{"budget left 4000", hold(4000, e.alice), Run, "policy"},
		{"budget exhausted", hold(1, e.alice), Hold, "budget"},
	}
	for _, tt := range tests {
		want(t, tt.name, e.decide(tt.a), tt.v, tt.reason)
	}
	e.db.View(func(tx *bolt.Tx) error {
		spent, budget, err := e.g.Spent(tx, "action:hold")
		if err != nil || spent != 8000 || budget != 8000 {
			t.Errorf("Spent = %d of %d, %v; want 8000 of 8000", spent, budget, err)
		}
		return nil
	})
	// The next day's window has a fresh budget; the pulse must be fresh too.
	e.clock.Advance(24 * time.Hour)
	e.lastPulse = e.clock.Now()
	want(t, "next window", e.decide(hold(10, e.alice)), Run, "policy")
	// After the policy's expiry nothing runs unsupervised.
	e.clock.Advance(24 * time.Hour)
	e.lastPulse = e.clock.Now()
	want(t, "after expiry", e.decide(hold(10, e.alice)), Hold, "needs-confirmation")
}

func TestHaltOnlyResumeLifts(t *testing.T) {
	e := newEnv(t)
	e.policy(48 * time.Hour)
	if _, err := e.control(e.sign(e.owner, PurposeHalt, map[string]any{"note": "lost phone"}, time.Hour)); err != nil {
		t.Fatal(err)
	}
	a := e.action(e.alice, "action:hold", map[string]any{"amount": 10, "unit": "EUR-cent"})
	want(t, "halted", e.decide(a), Hold, "halted")
	// A fresh pulse and a restart change nothing.
	e.clock.Advance(time.Minute)
	e.lastPulse = e.clock.Now()
	e.restart()
	var run []Held
	e.db.Update(func(tx *bolt.Tx) error { run, _ = e.g.Redecide(tx, e.clock.Now()); return nil })
	if len(run) != 0 {
		t.Fatalf("Redecide under halt ran %d actions", len(run))
	}
	want(t, "still halted", e.decide(e.action(e.alice, "action:hold", map[string]any{"amount": 10, "unit": "EUR-cent"})), Hold, "halted")
	// A halt from anyone but the owner is refused; so is a resume.
	if _, err := e.control(e.sign(e.alice, PurposeResume, map[string]any{}, time.Hour)); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("resume by Alice: err = %v, want ErrNotOwner", err)
	}
	res, err := e.control(e.sign(e.owner, PurposeResume, map[string]any{}, time.Hour))
	if err != nil || len(res.Run) != 2 {
		t.Fatalf("resume: ran %d held actions, %v; want 2", len(res.Run), err)
	}
}

func TestSuspensionIsProspectiveAndLifts(t *testing.T) {
	e := newEnv(t)
	e.policy(48 * time.Hour)
	e.clock.Advance(3 * time.Hour) // last pulse 3 h ago, decayMaxSec 2 h
	a := e.action(e.alice, "action:hold", map[string]any{"amount": 10, "unit": "EUR-cent"})
	want(t, "stale pulse", e.decide(a), Hold, "suspended")
	e.lastPulse = e.clock.Now()
	var run []Held
	if err := e.db.Update(func(tx *bolt.Tx) error { var err error; run, err = e.g.Redecide(tx, e.clock.Now()); return err }); err != nil {
		t.Fatal(err)
	}
	if len(run) != 1 || run[0].Action.ObjectID != a.ObjectID {
		t.Fatalf("Redecide after a fresh pulse ran %+v", run)
	}
	want(t, "after release", e.decide(a), Refuse, "in-flight")
}

func TestIndeterminateAfterCrash(t *testing.T) {
	e := newEnv(t)
	e.policy(48 * time.Hour)
	a := e.action(e.alice, "action:hold", map[string]any{"amount": 10, "unit": "EUR-cent", "idempotencyKey": "order-7"})
	want(t, "first", e.decide(a), Run, "policy")
	e.restart() // crash before Complete
	want(t, "after crash", e.decide(a), Refuse, "indeterminate")
	// A new object for the same intent (same idempotency key) is refused too.
	b := e.action(e.alice, "action:hold", map[string]any{"amount": 10, "unit": "EUR-cent", "idempotencyKey": "order-7"})
	want(t, "same key, new object", e.decide(b), Refuse, "indeterminate")
	// The same key from another counterparty is another intent.
	if a.LedgerKey() == e.action(e.owner, "action:hold", map[string]any{"idempotencyKey": "order-7"}).LedgerKey() {
		t.Fatal("ledger keys of two counterparties collide")
	}
}

func TestDenyAndExpiry(t *testing.T) {
	e := newEnv(t)
	a := e.action(e.alice, "action:capture", nil)
	want(t, "held", e.decide(a), Hold, "needs-confirmation")
	res, err := e.control(e.sign(e.owner, PurposeDeny, map[string]any{"hold": a.LedgerKey()}, time.Hour))
	if err != nil || res.Dropped == nil {
		t.Fatalf("deny = %+v, %v", res, err)
	}
	b := e.action(e.alice, "action:capture", nil) // expires in an hour
	want(t, "held", e.decide(b), Hold, "needs-confirmation")
	e.clock.Advance(time.Hour)
	if _, err := e.control(e.sign(e.owner, PurposeConfirm, map[string]any{"hold": b.LedgerKey()}, time.Hour)); !errors.Is(err, ErrExpired) {
		t.Fatalf("confirm after expiry: err = %v, want ErrExpired", err)
	}
	c := e.action(e.alice, "action:capture", nil)
	want(t, "held", e.decide(c), Hold, "needs-confirmation")
	e.clock.Advance(2 * time.Hour)
	var swept []Held
	e.db.Update(func(tx *bolt.Tx) error { swept, _ = e.g.Sweep(tx, e.clock.Now()); return nil })
	if len(swept) != 2 {
		t.Fatalf("Sweep dropped %d holds, want 2 (the one a confirmation came too late for, and the last)", len(swept))
	}
}

func TestPolicyInstall(t *testing.T) {
	e := newEnv(t)
	agent := e.agent.DID().String()
	rule := func(m map[string]any) []map[string]any {
		r := map[string]any{"action": "action:hold", "counterparties": []string{e.alice.DID().String()}}
		for k, v := range m {
			r[k] = v
		}
		return []map[string]any{r}
	}
	tests := []struct {
		name    string
		signer  *did.PrivateKey
		payload map[string]any
		ttl     time.Duration
		want    error
	}{
		{"ok", e.owner, map[string]any{"agent": agent, "rules": rule(nil)}, time.Hour, nil},
		{"not owner", e.alice, map[string]any{"agent": agent, "rules": rule(nil)}, time.Hour, ErrNotOwner},
		{"other agent", e.owner, map[string]any{"agent": e.alice.DID().String(), "rules": rule(nil)}, time.Hour, ErrBadPolicy},
		{"no expiry", e.owner, map[string]any{"agent": agent, "rules": rule(nil)}, 0, ErrBadPolicy},
		{"cap without unit", e.owner, map[string]any{"agent": agent, "rules": rule(map[string]any{"perActionCap": 5})}, time.Hour, ErrBadPolicy},
		{"budget without window", e.owner, map[string]any{"agent": agent, "rules": rule(map[string]any{"unit": "u", "budget": 5})}, time.Hour, ErrBadPolicy},
		{"negative cap", e.owner, map[string]any{"agent": agent, "rules": rule(map[string]any{"unit": "u", "perActionCap": -1})}, time.Hour, ErrBadPolicy},
		{"float cap", e.owner, map[string]any{"agent": agent, "rules": rule(map[string]any{"unit": "u", "perActionCap": 1.5})}, time.Hour, ErrBadPolicy},
		{"bad pattern", e.owner, map[string]any{"agent": agent, "rules": rule(map[string]any{"action": "action*"})}, time.Hour, ErrBadPolicy},
		{"no counterparties", e.owner, map[string]any{"agent": agent, "rules": rule(map[string]any{"counterparties": []string{}})}, time.Hour, ErrBadPolicy},
		{"unknown member", e.owner, map[string]any{"agent": agent, "rules": rule(nil), "extra": 1}, time.Hour, ErrBadPolicy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.control(e.sign(tt.signer, PurposePolicy, tt.payload, tt.ttl))
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("install: err = %v, want %v", err, tt.want)
			}
		})
	}
	// An older policy cannot replace a newer one.
	old := e.sign(e.owner, PurposePolicy, map[string]any{"agent": agent, "rules": rule(nil)}, time.Hour)
	e.clock.Advance(time.Minute)
	if _, err := e.control(e.sign(e.owner, PurposePolicy, map[string]any{"agent": agent, "rules": rule(nil)}, time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.control(old); !errors.Is(err, ErrStalePolicy) {
		t.Fatalf("installing an older policy: err = %v, want ErrStalePolicy", err)
	}
}

// TestOwnerOnlyHold: an action Hold keeps with OwnerOnly (an update that
// needs the owner's confirmation) is held whatever the policy allows: a
// Redecide under a policy that would run it leaves it held, across a
// restart, and only Confirm runs it. Hold refuses its key while held and
// once it runs.
func TestOwnerOnlyHold(t *testing.T) {
	e := newEnv(t)
	e.policy(48 * time.Hour)
	a := e.action(e.alice, "action:hold", map[string]any{"amount": 10, "unit": "EUR-cent"})
	a.OwnerOnly = true
	hold := func() Decision {
		var d Decision
		if err := e.db.Update(func(tx *bolt.Tx) error { var err error; d, err = e.g.Hold(tx, a, "needs-confirmation"); return err }); err != nil {
			t.Fatal(err)
		}
		return d
	}
	want(t, "hold", hold(), Hold, "needs-confirmation")
	want(t, "hold again", hold(), Refuse, "held")
	e.restart()
	var run []Held
	if err := e.db.Update(func(tx *bolt.Tx) error { var err error; run, err = e.g.Redecide(tx, e.clock.Now()); return err }); err != nil {
		t.Fatal(err)
	}
	if len(run) != 0 {
		t.Fatalf("Redecide ran the owner-only action under a policy: %+v", run)
	}
	err := e.db.Update(func(tx *bolt.Tx) error {
		h, err := e.g.Confirm(tx, a.LedgerKey(), e.clock.Now())
		if err == nil && (!h.Action.OwnerOnly || h.Reason != "needs-confirmation") {
			t.Errorf("confirmed %+v; want the owner-only hold", h)
		}
		return err
	})
	if err != nil {
		t.Fatalf("Confirm: %v", err)
	}
	want(t, "hold after confirm", hold(), Refuse, "in-flight")
}
