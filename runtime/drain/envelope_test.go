package drain_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed/envelope"
	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/runtime/gate"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// envelopePolicy trusts principal for action:pay within bank://acme/**.
func (h *harness) envelopePolicy(principal *did.PrivateKey) {
	h.t.Helper()
	scope := fmt.Sprintf(`{"v":"lap-scope-v0","act":"finance:pay","res":"bank://acme/**","cap":{"max_per_tx":1000,"max_cumulative":5000,"unit":"EUR-cent","window":"utc_day"},"cp":{"allow":[%q],"deny":[]},"depth":1}`, h.agent.DID())
	o := h.obj(h.owner, gate.PurposePolicy, h.clock.Now(), 48*time.Hour, map[string]any{
		"agent": h.agent.DID().String(),
		"rules": []map[string]any{{"action": "action:pay", "principal": principal.DID().String(), "scope": json.RawMessage(scope)}},
	})
	if rep := h.batch(runtimetest.Body(h.t, runtimetest.DataPart(h.t, o))); rep.Control != 1 {
		h.t.Fatalf("installing policy: %v", rep)
	}
}

// envelopeBody is a message carrying a Governed Object part, listing the
// extensions given and holding metadata.
func envelopeBody(t *testing.T, obj []byte, extensions []string, metadata json.RawMessage) []byte {
	t.Helper()
	m := a2a.NewUserMessage("m-env", "", runtimetest.DataPart(t, obj))
	m.Extensions, m.Metadata = extensions, metadata
	return runtimetest.Send(t, m)
}

// alicePassport is the principal's passport for Alice at h's agent; the
// batch's records come from Alice (the relay proved it). decay is the
// scope's decay_max_sec (0: none).
func (h *harness) alicePassport(principal *did.PrivateKey, decay int) string {
	h.t.Helper()
	scope := fmt.Sprintf(`{"v":"lap-scope-v0","act":"finance:pay","res":"bank://acme/accounts/**","cap":{"max_per_tx":500,"max_cumulative":800,"unit":"EUR-cent","window":"utc_day"},"cp":{"allow":[%q],"deny":[]}`, h.agent.DID())
	if decay > 0 {
		scope += fmt.Sprintf(`,"decay_max_sec":%d`, decay)
	}
	env, err := envelope.ParseEnvelope([]byte("[" + scope + "}]"))
	if err != nil {
		h.t.Fatal(err)
	}
	tok, err := envelope.Issue(principal, envelope.Claims{Iss: principal.DID().String(), Sub: h.alice.DID().String(),
		Aud: h.agent.DID().String(), Iat: t0.Unix(), Exp: t0.Add(15 * time.Minute).Unix(), Envelope: env})
	if err != nil {
		h.t.Fatal(err)
	}
	return tok
}

// pay is Alice's action:pay on account 7.
func (h *harness) pay(key string, amount int) []byte {
	return h.obj(h.alice, "action:pay", t0, time.Hour, map[string]any{"act": "finance:pay",
		"res": "bank://acme/accounts/7", "amount": amount, "unit": "EUR-cent", "idempotencyKey": key})
}

func TestEnvelopeActionRunsAtDequeue(t *testing.T) {
	h := newHarness(t, opts{plaintext: true})
	principal := runtimetest.Key(t, 20)
	h.envelopePolicy(principal)
	m := &a2a.Message{}
	if err := a2a.PresentEnvelope(m, a2a.EnvelopeMetadata{Passports: []string{h.alicePassport(principal, 0)}}); err != nil {
		t.Fatal(err)
	}
	rep := h.batch(
		envelopeBody(t, h.pay("p-1", 300), m.Extensions, m.Metadata),
		envelopeBody(t, h.pay("p-2", 600), m.Extensions, m.Metadata),
		envelopeBody(t, h.pay("p-3", 300), nil, m.Metadata), // metadata without the extension listed: no envelope
	)
	if rep.Ran != 1 || rep.Held != 2 || len(h.rec.IDs()) != 1 {
		t.Fatalf("report %v, handler got %v: want the in-cap action run, the others held", rep, h.rec.IDs())
	}
	h.wantHolds(map[string]string{"p-2": gate.ReasonOverCap, "p-3": "no-rule"})
}

func TestMalformedEnvelopeHeld(t *testing.T) {
	h := newHarness(t, opts{plaintext: true})
	h.envelopePolicy(runtimetest.Key(t, 20))
	obj := h.obj(h.alice, "action:pay", t0, time.Hour, map[string]any{"act": "finance:pay",
		"res": "bank://acme/accounts/7", "amount": 1, "unit": "EUR-cent", "idempotencyKey": "p-1"})
	text := h.obj(h.alice, "comms:message", t0, time.Hour, nil)
	bad := json.RawMessage(fmt.Sprintf(`{%q:{"passports":"not a list"}}`, a2a.ExtEnvelope))
	rep := h.batch(
		envelopeBody(t, obj, []string{a2a.ExtEnvelope}, bad),
		envelopeBody(t, text, []string{a2a.ExtEnvelope}, nil), // not an action: the envelope plays no part
	)
	if rep.Held != 1 || rep.Ran != 0 || rep.Acked != 2 || len(h.rec.IDs()) != 1 {
		t.Fatalf("report %v, handler got %v: want the action held, the message delivered", rep, h.rec.IDs())
	}
	h.wantHolds(map[string]string{"p-1": gate.ReasonMalformed})
	found := false
	for _, d := range rep.Diagnostics {
		found = found || d.Cause == "held:"+gate.ReasonMalformed
	}
	if !found {
		t.Errorf("diagnostics %+v: want one held:%s", rep.Diagnostics, gate.ReasonMalformed)
	}
}

// wantHolds checks the held actions' reasons by idempotency key.
func (h *harness) wantHolds(want map[string]string) {
	h.t.Helper()
	got := map[string]string{}
	h.db.View(func(tx *bolt.Tx) error {
		hs, err := h.gate.Holds(tx)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, x := range hs {
			got[x.Action.Key] = x.Reason
		}
		return nil
	})
	if fmt.Sprint(got) != fmt.Sprint(want) {
		h.t.Errorf("holds %v, want %v", got, want)
	}
}

func TestEnvelopePulseAtDequeue(t *testing.T) {
	h := newHarness(t, opts{plaintext: true})
	principal := runtimetest.Key(t, 20)
	h.envelopePolicy(principal)
	tok := h.alicePassport(principal, 600)
	doc, err := pulse.Sign(h.alice, pulse.Pulse{Agent: h.alice.DID(), Seq: 1, At: t0.Add(-time.Minute), Mode: "always_on"})
	if err != nil {
		t.Fatal(err)
	}
	fresh, stale := &a2a.Message{}, &a2a.Message{}
	if err := a2a.PresentEnvelope(fresh, a2a.EnvelopeMetadata{Passports: []string{tok}, Pulse: doc}); err != nil {
		t.Fatal(err)
	}
	if err := a2a.PresentEnvelope(stale, a2a.EnvelopeMetadata{Passports: []string{tok}}); err != nil {
		t.Fatal(err)
	}
	rep := h.batch(
		envelopeBody(t, h.pay("p-1", 100), fresh.Extensions, fresh.Metadata),
		envelopeBody(t, h.pay("p-2", 100), stale.Extensions, stale.Metadata),
	)
	if rep.Ran != 1 || rep.Held != 1 {
		t.Fatalf("report %v: want the action with the holder's fresh pulse run, the other held", rep)
	}
	h.wantHolds(map[string]string{"p-2": gate.ReasonStalePulse})
}
