package relay

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// retirement is the statement in which signer, as old, names next.
func retirement(t *testing.T, signer *did.PrivateKey, old, next did.DID, purpose string) []byte {
	t.Helper()
	o, err := governed.Sign(signer, governed.Template{IssuedAt: t0, Semantic: governed.Semantic{Schema: "https://torpor.dev/schemas/key-handover/v1"},
		Payload: map[string]string{"old": old.String(), "new": next.String()}, Purpose: purpose})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := o.MarshalJSON()
	return b
}

// TestRetiredAgentIsGone: a device that publishes a valid retirement (its
// own DID's signed statement naming the successor) is answered 410 Gone
// for every later send and KeyPackage fetch, naming the successor, and
// nothing is queued; forged or malformed retirements are refused; a state
// without one lifts the retirement.
func TestRetiredAgentIsGone(t *testing.T) {
	h := newHarness(t, nil)
	old, next, other, alice := didtest.Key(t, 1), didtest.Key(t, 2), didtest.Key(t, 3), didtest.Key(t, 4)
	c := h.device(t, old, "sleep", deviceOpts{})
	ctx := context.Background()
	for name, r := range map[string][]byte{
		"signed by another key": retirement(t, other, old.DID(), next.DID(), wire.PurposeRetirement),
		"another purpose":       retirement(t, old, old.DID(), next.DID(), "comms:message"),
		"names another old DID": retirement(t, old, other.DID(), next.DID(), wire.PurposeRetirement),
		"names itself next":     retirement(t, old, old.DID(), old.DID(), wire.PurposeRetirement),
		"not a Governed Object": []byte(`{"old":"x"}`),
	} {
		st := h.state(t, old, c.Hello(), "sleep", deviceOpts{})
		st.Retirement = r
		if _, err := c.Publish(ctx, st); err == nil {
			t.Errorf("retirement %s accepted", name)
		}
	}
	st := h.state(t, old, c.Hello(), "sleep", deviceOpts{})
	st.Retirement = retirement(t, old, old.DID(), next.DID(), wire.PurposeRetirement)
	if _, err := c.Publish(ctx, st); err != nil {
		t.Fatal(err)
	}
	r := h.post(t, old.DID(), alice, "1.0", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`)
	if r.status != http.StatusGone || r.json["error"] != tokenRetired || r.json["successor"] != next.DID().String() || r.json["queued"] != false ||
		!strings.HasSuffix(r.json["successorUrl"].(string), "/a/"+next.DID().String()) || r.json["retirement"] == nil {
		t.Fatalf("send to a retired agent: %d %s; want 410 naming %s", r.status, r.body, next.DID())
	}
	if n := len(h.queued(t, old.DID())); n != 0 {
		t.Errorf("%d records queued for a retired agent", n)
	}
	if r := h.getKP(t, "/a/"+old.DID().String()+"/mls/key-package"); r.status != http.StatusGone || r.json["successor"] != next.DID().String() {
		t.Errorf("KeyPackage of a retired agent: %d %s; want 410 naming the successor", r.status, r.body)
	}
	if _, err := c.Publish(ctx, h.state(t, old, c.Hello(), "sleep", deviceOpts{})); err != nil {
		t.Fatal(err)
	}
	if r := h.post(t, old.DID(), alice, "1.0", `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{}}`); r.status == http.StatusGone {
		t.Errorf("send after the retirement was lifted: %d %s", r.status, r.body)
	}
}

// TestRetirementCarriesAdmission: the successor a retirement names is
// admitted when the retired agent was (a key rotation keeps the device
// off probation), and not when it was not.
func TestRetirementCarriesAdmission(t *testing.T) {
	op := didtest.Key(t, 40)
	h := newHarness(t, func(c *Config) { c.Access.Operators = []did.DID{op.DID()} })
	ctx := context.Background()
	for _, admit := range []bool{true, false} {
		old, next := didtest.Key(t, map[bool]byte{true: 1, false: 3}[admit]), didtest.Key(t, map[bool]byte{true: 2, false: 4}[admit])
		c := h.device(t, old, "sleep", deviceOpts{})
		if admit {
			if r := h.admitAs(t, old.DID(), op); r.status != 200 {
				t.Fatalf("admit: %d %s", r.status, r.body)
			}
			<-h.relay.Link().Gone(old.DID().String())
			c = h.device(t, old, "sleep", deviceOpts{})
		}
		st := h.state(t, old, c.Hello(), "sleep", deviceOpts{})
		st.Retirement = retirement(t, old, old.DID(), next.DID(), wire.PurposeRetirement)
		if _, err := c.Publish(ctx, st); err != nil {
			t.Fatal(err)
		}
		if ok, err := h.states.Admitted(ctx, next.DID().String()); err != nil || ok != admit {
			t.Errorf("predecessor admitted %v: successor admitted %v (%v), want %v", admit, ok, err, admit)
		}
	}
}
