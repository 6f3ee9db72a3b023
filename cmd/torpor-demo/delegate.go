package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/governed/envelope"
	"github.com/torpor-dev/torpor/session/sender"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// The Autonomy Envelope of the story (docs/envelope.md): a farm
// cooperative, the principal, lets the sender pay the sleeping agent's
// invoices, up to payCap a payment, and the sleeping agent's owner trusts
// the cooperative for action:pay.
const (
	payRes    = "https://coop.example/invoices/**"
	payCap    = 500  // EUR-cent a payment
	payPerDay = 2000 // EUR-cent a UTC day
)

// payScope is the scope the principal grants and the owner's policy
// bounds it by: finance:pay of the cooperative's invoices, at agent only.
func payScope(agent string) envelope.Scope {
	depth := 0
	return envelope.Scope{V: envelope.Version, Act: "finance:pay", Res: payRes,
		Cap: &envelope.Cap{MaxPerTx: payCap, MaxCumulative: payPerDay, Unit: "EUR-cent", Window: envelope.WindowUTCDay},
		CP:  &envelope.Counterparties{Allow: []string{agent}, Deny: []string{}}, Depth: &depth}
}

// grant makes the principal's key and its passport for the sender at a,
// with torporctl keygen and torporctl passport issue, as a user would.
func (d *demo) grant(ctx context.Context, a *agent) error {
	dir := d.path("principal")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	principal, err := d.keygen(ctx, dir+"/principal.key")
	if err != nil {
		return err
	}
	d.principal = principal.DID().String()
	b, err := json.Marshal([]envelope.Scope{payScope(a.did())})
	if err != nil {
		return err
	}
	if err := os.WriteFile(dir+"/envelope.json", b, 0o600); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, d.bin("torporctl"), "passport", "issue", "--key", dir+"/principal.key",
		"--sub", d.senderKey.DID().String(), "--aud", a.did(), "--envelope", dir+"/envelope.json", "--ttl", "12h").Output()
	if err != nil {
		return fmt.Errorf("demo: torporctl passport issue: %v%s", err, stderrOf(err))
	}
	d.passport = strings.TrimSpace(string(out))
	d.n.Event("coop", KindGrant, "torporctl keygen: %s, a farm cooperative, the principal; torporctl passport issue: the sender may pay %s's invoices unsupervised: finance:pay on %s, at most %s a payment and %s a day",
		short(d.principal), a.name, payRes, euros(payCap), euros(payPerDay))
	return nil
}

// euros renders cents as "5.00 EUR".
func euros(cents int64) string { return fmt.Sprintf("%d.%02d EUR", cents/100, cents%100) }

// delegate has the owner trust the principal in a signed policy, sent to
// a (asleep) in an MLS pair session of the owner's own, then sends a two
// payments presenting the sender's passport: one within the cap, which a
// runs unsupervised at its wake, and one over it, which a holds for its
// owner (envelope-over-cap).
func (d *demo) delegate(ctx context.Context, a *agent) error {
	if err := d.trust(ctx, a); err != nil {
		return err
	}
	f := forge{sender: d.senderKey, stranger: d.stranger}
	em := &a2a.EnvelopeMetadata{Passports: []string{d.passport}}
	now := d.clock.Now()
	for _, p := range []struct {
		idem, invoice string
		cents         int64
		expect        string
	}{{"invoice-2026-118", "2026-118", 450, expectDelegated}, {"invoice-2026-119", "2026-119", 900, "envelope-over-cap"}} {
		l, err := f.Payment(now, p.idem, "https://coop.example/invoices/"+p.invoice, p.cents, p.expect)
		if err != nil {
			return err
		}
		l.Envelope = em
		d.deliver(ctx, a, l)
	}
	return nil
}

// trust sends a the owner's policy: a rule trusting the principal's
// passports for action:pay within payScope.
func (d *demo) trust(ctx context.Context, a *agent) error {
	var err error
	if d.ownerSend, err = sender.Open(d.path("owner", "sessions.db"), d.owner, d.hc, d.clock); err != nil {
		return err
	}
	policy := map[string]any{"agent": a.did(), "rules": []map[string]any{{"action": "action:pay", "principal": d.principal,
		"scope": payScope(a.did()), "unit": "EUR-cent", "perActionCap": payCap}}}
	o, err := governed.Sign(d.owner, governed.Template{IssuedAt: d.clock.Now(), Semantic: governed.Semantic{Schema: schemaPolicy},
		Payload: policy, Purpose: "torpor:policy", TTL: 24 * time.Hour})
	if err != nil {
		return err
	}
	b, err := o.MarshalJSON()
	if err != nil {
		return err
	}
	dl, err := d.ownerSend.Send(ctx, sender.RelayPeer(d.relayURL, a.key.DID()), b)
	if err != nil || !dl.Queued {
		d.fail("the owner's policy for %s: %v (queued %v)", a.name, err, err == nil && dl.Queued)
		return nil
	}
	d.n.Event("owner", KindGrant, "→ %s: torpor:policy signed by the owner, in an MLS pair session of its own: trust %s's passports for action:pay within finance:pay on %s, %s a payment — 503 queued",
		a.name, short(d.principal), payRes, euros(payCap))
	return nil
}

// Payment is an action:pay of cents on the invoice res, presented under
// the sender's Autonomy Envelope; expect is expectDelegated or the reason
// the agent holds it.
func (f forge) Payment(now time.Time, idem, res string, cents int64, expect string) (Letter, error) {
	t := governed.Template{IssuedAt: now, Semantic: governed.Semantic{Schema: schemaAction},
		Payload: map[string]any{"act": "finance:pay", "res": res, "idempotencyKey": idem, "amount": cents, "unit": "EUR-cent"},
		Purpose: "action:pay"}
	label := fmt.Sprintf("action:pay of %s for %s under the principal's passport (key %s)", euros(cents), strings.TrimPrefix(res, "https://"), idem)
	l, err := f.letter(label, expectDelegated, f.sender, t)
	if expect != expectDelegated {
		l.Expect, l.Reason = expectRefused, expect
	}
	l.Key = f.sender.DID().String() + " " + idem
	return l, err
}
