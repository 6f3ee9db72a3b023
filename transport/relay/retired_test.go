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
