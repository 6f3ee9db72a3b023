//go:build integration

package envelope

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	genv "github.com/torpor-dev/torpor/governed/envelope"
	"github.com/torpor-dev/torpor/pulse"
)

// The shop's resources the principal's grant covers, and one it does not.
const (
	orders  = "https://shop.example/orders/**"
	outside = "https://shop.example/admin/users"
)

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

// chains are the passport files (and, for the widened one, the token) the
// senders present, root first.
type chains struct {
	ok, decayed, expired, wrongAud, broken []string
	widened                                []string // tokens, not files
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
		widened: []string{w.token(pA), wide}}
}

// expiring issues A's grant to B (under pA) that expires two scaled
// minutes from now on the relay's clock, which runs ahead of the real one
// torporctl passport issue dates it by; it returns the file and the
// passport's exp.
func (w *world) expiring(pA string) (string, time.Time) {
	c := w.cast
	ttl := (w.clk.Now().Sub(time.Now()) + 2*time.Minute).Truncate(time.Second)
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

// sendActions sends every case to the sleeping device and returns what
// the device must do with each, and the expired passport's exp.
func (w *world) sendActions(ch chains) ([]outcome, time.Time) {
	sendCtl := func(p map[string]any, extra ...string) { w.sendCtl(w.cast.sender, purposePay, p, extra...) }
	// First, while its two scaled minutes last.
	expired, exp := w.expiring(ch.ok[0])
	sendCtl(pay("pay-expired", "https://shop.example/orders/1004", 100), passports([]string{ch.ok[0], expired})...)
	sendCtl(pay("pay-ok", "https://shop.example/orders/1001", 300), passports(ch.ok)...)
	sendCtl(pay("pay-fresh-pulse", "https://shop.example/orders/1002", 200),
		append(passports(ch.decayed), "--pulse", w.pulseFile("fresh.pulse", w.clk.Now()))...)
	sendCtl(pay("pay-over-cap", "https://shop.example/orders/1003", 900), passports(ch.ok)...)
	sendCtl(pay("pay-outside", outside, 100), passports(ch.ok)...)
	sendCtl(pay("pay-stale-pulse", "https://shop.example/orders/1005", 100),
		append(passports(ch.decayed), "--pulse", w.pulseFile("stale.pulse", w.clk.Now().Add(-3*time.Hour)))...)
	w.refusedByCtl(ch.wrongAud)
	w.sendLib(pay("pay-wrong-audience", "https://shop.example/orders/1006", 100), w.tokens(ch.wrongAud)...)
	w.sendLib(pay("pay-broken-chain", "https://shop.example/orders/1007", 100), w.tokens(ch.broken)...)
	w.sendLib(pay("pay-widened", "https://shop.example/orders/1008", 100), ch.widened...)
	return []outcome{{"pay-ok", "envelope"}, {"pay-fresh-pulse", "envelope"},
		{"pay-expired", "envelope-expired"}, {"pay-over-cap", "envelope-over-cap"}, {"pay-outside", "envelope-scope"},
		{"pay-stale-pulse", "envelope-stale-pulse"}, {"pay-wrong-audience", "envelope-audience"},
		{"pay-broken-chain", "envelope-broken-chain"}, {"pay-widened", "envelope-widened"}}, exp
}

// tokens reads passport files.
func (w *world) tokens(files []string) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = w.token(f)
	}
	return out
}

// refusedByCtl checks that torporctl send refuses to present a chain for
// another device, before anything crosses the network.
func (w *world) refusedByCtl(chain []string) {
	w.t.Helper()
	args := append([]string{"send", w.cast.device.DID().String(), "--relay", w.relay.URL, "--key", w.keyFile(w.cast.sender),
		"--plaintext", "--time-scale", "100", "--purpose", purposePay, "--payload", `{"act":"finance:pay"}`}, passports(chain)...)
	if out, errOut, err := w.tryCtl(args...); err == nil || !strings.Contains(errOut, "does not verify") {
		w.t.Errorf("torporctl send of a chain for another device: %v\n%s%s; want refused (does not verify)", err, out, errOut)
	}
}

// TestEnvelopeAcrossSleep (issue 33): a principal P grants its agent A a
// passport for the device, A attenuates it for the sender B, and the
// device's owner trusts P for action:pay within a scope. B's actions,
// queued by the relay while the device sleeps, are judged at its next wake
// at its trusted time: those within both scopes run unsupervised (reason
// envelope, handed to the application); the rest are held for the owner,
// each with its reason, in the agent's log and in the signed status the
// relay's fleet console shows: over the cap, outside the resource, a
// passport that expired while the device slept, a chain for another
// device, a broken chain, a widened child and a stale pulse.
func TestEnvelopeAcrossSleep(t *testing.T) {
	start := time.Now()
	w := newWorld(t)
	ch := w.issueChains()
	if m := w.wake(); m[1] != "0" { // boot: publishes its card, drains nothing
		t.Fatalf("the boot wake drained %s records, want 0", m[1])
	}
	w.sleep()
	w.sendCtl(w.cast.owner, "torpor:policy", w.policy())
	want, exp := w.sendActions(ch)
	// The expired passport's exp passes on the shared scaled clock (two
	// scaled minutes are 1.2 s) before the device wakes.
	if err := clock.Sleep(context.Background(), w.clk, exp.Sub(w.clk.Now())+time.Second); err != nil {
		t.Fatal(err)
	}
	m := w.wake()
	if m[1] != strconv.Itoa(1+len(want)) {
		t.Errorf("the wake drained %s records, want %d (the policy and the actions)", m[1], 1+len(want))
	}
	w.checkLog(want)
	w.checkRan(want)
	w.checkStatus(want)
	t.Logf("%d actions judged across a sleep in %v", len(want), time.Since(start).Round(time.Millisecond))
}

// heldRE matches the agent's log line of a held action.
var heldRE = regexp.MustCompile(`msg="action held" .*reason=(\S+)`)

// checkLog checks the agent's log: each refused action held with its
// reason, each allowed one logged as run with reason envelope, and the
// wake's counts.
func (w *world) checkLog(want []outcome) {
	w.t.Helper()
	ranRE := regexp.MustCompile(`reason=envelope( |$)`)
	held, ran := 0, 0
	for _, o := range want {
		if o.reason == "envelope" {
			ran++
			if w.agent.Count(ranRE, o.idem) == 0 {
				w.t.Errorf("no agent log line says %s ran with reason envelope", o.idem)
			}
			continue
		}
		held++
		if n := w.agent.Count(heldRE, "reason="+o.reason+" ", o.idem); n != 1 {
			w.t.Errorf("%d log lines hold %s with reason %s, want 1", n, o.idem, o.reason)
		}
	}
	counts := regexp.MustCompile(`msg=wake .* held=(\d+) ran=(\d+) `)
	if m := w.agent.Wait(w.t, counts, "records="+strconv.Itoa(1+len(want))+" "); m[1] != strconv.Itoa(held) || m[2] != strconv.Itoa(ran) {
		w.t.Errorf("the wake held %s and ran %s actions, want %d and %d", m[1], m[2], held, ran)
	}
}

// checkRan checks that the application received exactly the actions that
// run, each once.
func (w *world) checkRan(want []outcome) {
	w.t.Helper()
	got := map[string]int{}
	for _, r := range w.sink.Received() {
		_, idem, _ := strings.Cut(r.IdempotencyKey, " ") // the ledger key is "<issuer> <key>"
		got[idem]++
	}
	for _, o := range want {
		if n, runs := got[o.idem], o.reason == "envelope"; (runs && n != 1) || (!runs && n != 0) {
			w.t.Errorf("the application received %s %d times (reason %s)", o.idem, n, o.reason)
		}
	}
}

// checkStatus checks the device's signed status, read from the relay's
// fleet console: every refused action held with its reason.
func (w *world) checkStatus(want []outcome) {
	w.t.Helper()
	d := w.device()
	if d.Detail == nil {
		w.t.Fatalf("the device's page has no detail: %+v", d)
	}
	got := map[string]string{}
	for _, h := range d.Detail.Held {
		_, idem, _ := strings.Cut(h.Key, " ")
		got[idem] = h.Reason
	}
	for _, o := range want {
		if o.reason == "envelope" {
			if r, ok := got[o.idem]; ok {
				w.t.Errorf("the signed status holds %s (%s), which ran", o.idem, r)
			}
		} else if got[o.idem] != o.reason {
			w.t.Errorf("the signed status holds %s with reason %q, want %q", o.idem, got[o.idem], o.reason)
		}
	}
	if d.HeldCount != len(want)-2 {
		w.t.Errorf("the device's page counts %d held actions, want %d", d.HeldCount, len(want)-2)
	}
}
