//go:build integration

package envelope

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	genv "github.com/torpor-dev/torpor/governed/envelope"
	"github.com/torpor-dev/torpor/pulse"
)

// The shop's resources the principal's grant covers, and one it does not.
const (
	orders  = "https://shop.example/orders/**"
	outside = "https://shop.example/admin/users"
)

// sleepFor is how long the device sleeps after the test names its wake,
// on the scaled clock (12 s real time): the agent's boot wake and then
// the test's sends must end before it. On two idle cores they take about
// a second; on two loaded ones the boot wake alone took 6 s.
const sleepFor = 20 * time.Minute

// decay is the decay_max_sec of the sender's second passport: its
// authority suspends when its latest pulse is older (36 s real time).
const decay = 3600

// scope returns one lap-scope-v0 scope: finance:pay on res, capped per
// transaction and per UTC day in EUR-cent, for the device alone, with
// depth and, unless 0, decay_max_sec.
func scope(res string, perTx, perDay int64, device *did.PrivateKey, depth int, decaySec int64) genv.Scope {
	s := genv.Scope{V: genv.Version, Act: "finance:pay", Res: res,
		Cap: &genv.Cap{MaxPerTx: perTx, MaxCumulative: perDay, Unit: unit, Window: genv.WindowUTCDay},
		CP:  &genv.Counterparties{Allow: []string{device.DID().String()}, Deny: []string{}}, Depth: &depth}
	if decaySec > 0 {
		s.DecayMaxSec = &decaySec
	}
	return s
}

// chains are the passport files the senders present, root first.
type chains struct {
	ok, decayed, wrongAud, broken, untrusted, widened []string
}

// issueChains issues the passports with torporctl passport issue: P
// grants A, A attenuates for B (--parent); P and A do the same for another
// device; the stranger C grants B what only A could. A's widened grant to
// B bypasses torporctl's check (governed/envelope.Issue). The expired one
// is issued later, by expiring.
func (w *world) issueChains() chains {
	c, day := w.cast, 24*time.Hour
	pA := w.issue("pA", c.principal, c.agentA, c.device, []genv.Scope{scope(orders, 500, 2000, c.device, 1, 0)}, "", day)
	pB := w.issue("pB", c.agentA, c.sender, c.device, []genv.Scope{scope(orders, 500, 1000, c.device, 0, 0)}, pA, day)
	pBd := w.issue("pB-decay", c.agentA, c.sender, c.device, []genv.Scope{scope(orders, 500, 1000, c.device, 0, decay)}, pA, day)
	pAo := w.issue("pA-other", c.principal, c.agentA, c.other, []genv.Scope{scope(orders, 500, 2000, c.other, 1, 0)}, "", day)
	pBo := w.issue("pB-other", c.agentA, c.sender, c.other, []genv.Scope{scope(orders, 500, 1000, c.other, 0, 0)}, pAo, day)
	pC := w.issue("pC", c.stranger, c.sender, c.device, []genv.Scope{scope(orders, 500, 1000, c.device, 0, 0)}, "", day)
	now := time.Now()
	wide, err := genv.Issue(c.agentA, genv.Claims{Iss: c.agentA.DID().String(), Sub: c.sender.DID().String(),
		Aud: c.device.DID().String(), Iat: now.Unix(), Exp: now.Add(day).Unix(),
		Envelope: []genv.Scope{scope(orders, 5000, 10000, c.device, 0, 0)}})
	if err != nil {
		w.t.Fatal(err)
	}
	return chains{ok: []string{pA, pB}, decayed: []string{pA, pBd}, wrongAud: []string{pAo, pBo}, broken: []string{pA, pC},
		untrusted: []string{pC}, widened: []string{pA, w.writeFile("pB-wide.jws", []byte(wide))}}
}

// expiring issues A's grant to B (under pA) that expires five scaled
// minutes from now on the relay's clock, which runs ahead of the real one
// torporctl passport issue dates it by; it returns the file and the
// passport's exp.
func (w *world) expiring(pA string) (string, time.Time) {
	c := w.cast
	ttl := (time.Until(w.clk.Now()) + 5*time.Minute).Truncate(time.Second)
	f := w.issue("pB-short", c.agentA, c.sender, c.device, []genv.Scope{scope(orders, 500, 1000, c.device, 0, 0)}, pA, ttl)
	_, payload, _ := strings.Cut(w.token(f), ".")
	payload, _, _ = strings.Cut(payload, ".")
	b, err := base64.RawURLEncoding.DecodeString(payload)
	var cl genv.Claims
	if err != nil || json.Unmarshal(b, &cl) != nil {
		w.t.Fatalf("reading %s's claims: %v", f, err)
	}
	return f, time.Unix(cl.Exp, 0)
}

// policy is the owner's torpor:policy for the device: P is trusted for
// action:pay within a scope of its own.
func (w *world) policy() map[string]any {
	c := w.cast
	return map[string]any{"agent": c.device.DID().String(), "rules": []map[string]any{{
		"action": purposePay, "principal": c.principal.DID().String(),
		"scope": scope("https://shop.example/**", 500, 5000, c.device, 2, 0), "unit": unit, "perActionCap": 500}}}
}

// pay is an action's payload: finance:pay of amount on res.
func pay(idem, res string, amount int64) map[string]any {
	return map[string]any{"act": "finance:pay", "res": res, "amount": amount, "unit": unit, "idempotencyKey": idem}
}

// pulseFile writes a pulse of the sender's made at at and returns the file.
func (w *world) pulseFile(name string, at time.Time) string {
	k := w.cast.sender
	doc, err := pulse.Sign(k, pulse.Pulse{Agent: k.DID(), Seq: 1, At: at, Mode: "always_on"})
	if err != nil {
		w.t.Fatal(err)
	}
	return w.writeFile(name, doc)
}

// passports returns torporctl send's --passport flags for files.
func passports(files []string) []string {
	var out []string
	for _, f := range files {
		out = append(out, "--passport", f)
	}
	return out
}

// outcome is what the device must do with one action.
type outcome struct {
	idem   string
	reason string // "envelope": it runs; otherwise the hold's reason
}

// action is one case: a payment, the chain (files, root first) and pulse
// file it presents, who sends it (nil: B) and how, and its outcome.
type action struct {
	outcome
	res   string
	cents int64
	chain []string
	pulse string
	from  *did.PrivateKey
	lib   bool // through the Go sender library: torporctl send refuses to present the chain
}

// actions are the cases after the expired one, in the order they are
// queued: the budget's second payment comes after the first.
func (w *world) actions(ch chains) []action {
	order := func(n int) string { return "https://shop.example/orders/" + strconv.Itoa(n) }
	fresh, stale := w.pulseFile("fresh.pulse", w.clk.Now()), w.pulseFile("stale.pulse", w.clk.Now().Add(-3*time.Hour))
	return []action{
		{outcome: outcome{"pay-ok", "envelope"}, res: order(1001), cents: 300, chain: ch.ok},
		{outcome: outcome{"pay-fresh-pulse", "envelope"}, res: order(1002), cents: 200, chain: ch.decayed, pulse: fresh},
		{outcome: outcome{"pay-budget-1", "envelope"}, res: order(1003), cents: 450, chain: ch.ok},
		{outcome: outcome{"pay-budget-2", "envelope-budget"}, res: order(1004), cents: 450, chain: ch.ok},
		{outcome: outcome{"pay-over-cap", "envelope-over-cap"}, res: order(1005), cents: 900, chain: ch.ok},
		{outcome: outcome{"pay-outside", "envelope-scope"}, res: outside, cents: 100, chain: ch.ok},
		{outcome: outcome{"pay-stale-pulse", "envelope-stale-pulse"}, res: order(1006), cents: 100, chain: ch.decayed, pulse: stale},
		{outcome: outcome{"pay-untrusted-principal", "envelope-principal"}, res: order(1007), cents: 100, chain: ch.untrusted},
		{outcome: outcome{"pay-not-holder", "envelope-holder"}, res: order(1008), cents: 100, chain: ch.ok, from: w.cast.stranger, lib: true},
		{outcome: outcome{"pay-wrong-audience", "envelope-audience"}, res: order(1009), cents: 100, chain: ch.wrongAud, lib: true},
		{outcome: outcome{"pay-broken-chain", "envelope-broken-chain"}, res: order(1010), cents: 100, chain: ch.broken, lib: true},
		{outcome: outcome{"pay-widened", "envelope-widened"}, res: order(1011), cents: 100, chain: ch.widened, lib: true},
	}
}

// sendActions sends every case to the sleeping device and returns what
// the device must do with each, and the expired passport's exp.
func (w *world) sendActions(ch chains) ([]outcome, time.Time) {
	// First, while its five scaled minutes last.
	expired, exp := w.expiring(ch.ok[0])
	w.sendCtl(w.cast.sender, purposePay, pay("pay-expired", "https://shop.example/orders/1000", 100), passports([]string{ch.ok[0], expired})...)
	want := []outcome{{"pay-expired", "envelope-expired"}}
	for _, a := range w.actions(ch) {
		p := pay(a.idem, a.res, a.cents)
		switch {
		case a.lib:
			w.sendLib(cmpKey(a.from, w.cast.sender), p, w.tokens(a.chain)...)
		case a.pulse != "":
			w.sendCtl(w.cast.sender, purposePay, p, append(passports(a.chain), "--pulse", a.pulse)...)
		default:
			w.sendCtl(w.cast.sender, purposePay, p, passports(a.chain)...)
		}
		want = append(want, a.outcome)
	}
	w.refusedByCtl(ch.wrongAud, "does not verify")
	w.refusedByCtl(ch.widened, "not covered by parent")
	return want, exp
}

// cmpKey returns k, or def when k is nil.
func cmpKey(k, def *did.PrivateKey) *did.PrivateKey {
	if k == nil {
		return def
	}
	return k
}

// tokens reads passport files.
func (w *world) tokens(files []string) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = w.token(f)
	}
	return out
}

// refusedByCtl checks that torporctl send refuses to present chain
// (saying why), before anything crosses the network.
func (w *world) refusedByCtl(chain []string, why string) {
	w.t.Helper()
	args := append([]string{"send", w.cast.device.DID().String(), "--relay", w.relay.URL, "--key", w.keyFile(w.cast.sender),
		"--plaintext", "--time-scale", strconv.Itoa(scale), "--purpose", purposePay, "--payload", `{"act":"finance:pay"}`}, passports(chain)...)
	if out, errOut, err := w.tryCtl(args...); err == nil || !strings.Contains(errOut, why) {
		w.t.Errorf("torporctl send %v: %v\n%s%s; want refused (%s)", chain, err, out, errOut, why)
	}
}

// TestEnvelopeAcrossSleep: a principal P grants its agent A a
// passport for the device, A attenuates it for the sender B, and the
// device's owner trusts P for action:pay within a scope. B's actions,
// queued by the relay while the device sleeps, are judged at its next wake
// (its timer's, twenty scaled minutes after it started) at its trusted time:
// those within both scopes run unsupervised (reason envelope, handed to
// the application); the rest are held for the owner, each with its reason, in the agent's log and in the signed status the
// relay's fleet console shows: beyond the leaf's daily budget, over the
// cap, outside the resource, a passport that expired while the device
// slept, a stale pulse, an untrusted principal, a chain presented by
// someone it was not granted to, a chain for another device, a broken
// chain and a widened child. torporctl send presents the chains in the
// sender's MLS pair session; the ones it refuses to present go
// unencrypted through the Go sender library.
func TestEnvelopeAcrossSleep(t *testing.T) {
	start := time.Now()
	w := newWorld(t)
	ch := w.issueChains()
	wake := w.clk.Now().Add(sleepFor).Truncate(time.Second)
	w.start(wake)
	sending := time.Now()
	w.sendCtl(w.cast.owner, "torpor:policy", w.policy())
	want, exp := w.sendActions(ch)
	t.Logf("the policy and %d actions queued in %v", len(want), time.Since(sending).Round(time.Millisecond))
	if now := w.clk.Now(); !now.Before(wake) || !exp.Before(wake) {
		t.Fatalf("sent until %v, the expired passport's exp %v: want both before the device's wake at %v", now, exp, wake)
	}
	if m := w.agent.Next(t, 1, "msg=wake "); !wakeRE.MatchString(m[0]) || wakeRE.FindStringSubmatch(m[0])[1] != "timer" {
		t.Fatalf("the device's next wake: %s; want one on its timer", m[0])
	}
	t.Run("held in the log", func(t *testing.T) { w.checkHeld(t, want) })
	t.Run("run logged with reason envelope", func(t *testing.T) { w.checkRunLogged(t, want) })
	t.Run("run by the application", func(t *testing.T) { w.checkRan(t, want) })
	t.Run("held in the signed status", func(t *testing.T) { w.checkStatus(t, want) })
	t.Logf("%d actions judged across a sleep in %v", len(want), time.Since(start).Round(time.Millisecond))
}

// heldRE matches the agent's log line of a held action.
var heldRE = regexp.MustCompile(`msg="action held" `)

// checkHeld checks the agent's log: each refused action held once with
// its reason, and the wake's counts.
func (w *world) checkHeld(t *testing.T, want []outcome) {
	held, ran := 0, 0
	for _, o := range want {
		if o.reason == "envelope" {
			ran++
			continue
		}
		held++
		if n := w.agent.Count(heldRE, "reason="+o.reason+" ", o.idem); n != 1 {
			t.Errorf("%d log lines hold %s with reason %s, want 1", n, o.idem, o.reason)
		}
	}
	// The policy, the actions and the owner's and B's MLS handshakes.
	counts := regexp.MustCompile(`msg=wake .*drain="records=(\d+) acked=(\d+) .* held=(\d+) ran=(\d+) .* control=1 handshake=2 `)
	m := w.agent.Wait(t, counts)
	if n := strconv.Itoa(3 + len(want)); m[1] != n || m[2] != n || m[3] != strconv.Itoa(held) || m[4] != strconv.Itoa(ran) {
		t.Errorf("the wake drained %s records, acked %s, held %s and ran %s; want %s, %[5]s, %d and %d", m[1], m[2], m[3], m[4], n, held, ran)
	}
}

// checkRunLogged checks that the agent's log names the reason envelope of
// each action it ran under the envelope, with its idempotency key.
func (w *world) checkRunLogged(t *testing.T, want []outcome) {
	ranRE := regexp.MustCompile(`reason=envelope( |$)`)
	for _, o := range want {
		if o.reason == "envelope" && w.agent.Count(ranRE, o.idem) == 0 {
			t.Errorf("no agent log line says %s ran with reason envelope", o.idem)
		}
	}
}

// checkRan checks that the application received exactly the actions that
// run, each once.
func (w *world) checkRan(t *testing.T, want []outcome) {
	got := map[string]int{}
	for _, r := range w.sink.Received() {
		_, idem, _ := strings.Cut(r.IdempotencyKey, " ") // the ledger key is "<issuer> <key>"
		got[idem]++
	}
	for _, o := range want {
		if n, runs := got[o.idem], o.reason == "envelope"; (runs && n != 1) || (!runs && n != 0) {
			t.Errorf("the application received %s %d times (reason %s)", o.idem, n, o.reason)
		}
	}
}

// checkStatus checks the device's signed status, read from the relay's
// fleet console: every refused action held with its reason.
func (w *world) checkStatus(t *testing.T, want []outcome) {
	d := w.device(t)
	if d.Detail == nil {
		t.Fatalf("the device's page has no detail: %+v", d)
	}
	got := map[string]string{}
	for _, h := range d.Detail.Held {
		_, idem, _ := strings.Cut(h.Key, " ")
		got[idem] = h.Reason
	}
	for _, o := range want {
		if o.reason == "envelope" {
			if r, ok := got[o.idem]; ok {
				t.Errorf("the signed status holds %s (%s), which ran", o.idem, r)
			}
		} else if got[o.idem] != o.reason {
			t.Errorf("the signed status holds %s with reason %q, want %q", o.idem, got[o.idem], o.reason)
		}
	}
	held := 0
	for _, o := range want {
		if o.reason != "envelope" {
			held++
		}
	}
	if d.HeldCount != held || len(d.Detail.Held) != held {
		t.Errorf("the device's page counts %d held actions and lists %d, want %d", d.HeldCount, len(d.Detail.Held), held)
	}
}
