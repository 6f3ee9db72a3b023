package relay

import (
	"context"
	"testing"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// signedStatus is a status payload signed by signer with purpose.
func signedStatus(t *testing.T, signer *did.PrivateKey, purpose string, payload any) []byte {
	t.Helper()
	o, err := governed.Sign(signer, governed.Template{IssuedAt: t0, Semantic: governed.Semantic{Schema: wire.StatusSchema}, Purpose: purpose, Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := o.MarshalJSON()
	return b
}

// TestStatusIsVerifiedAndKept: a device's signed status is kept verbatim
// in its state, and kept across a state without one; a status signed by
// another key, with another purpose, or with a payload that is not a
// status refuses the state and changes nothing.
func TestStatusIsVerifiedAndKept(t *testing.T) {
	h := newHarness(t, nil)
	dev, other := didtest.Key(t, 1), didtest.Key(t, 2)
	c := h.device(t, dev, "sleep", deviceOpts{})
	ctx := context.Background()
	good := wire.Status{Version: "1.2.3", Board: "rpi4", Halted: true, HeldCount: 1,
		Held: []wire.StatusHeld{{Key: "did:key:zS k1", Purpose: "pay", Reason: "needs-confirmation", HeldAt: t0}}}
	st := h.state(t, dev, c.Hello(), "sleep", deviceOpts{})
	st.Status = signedStatus(t, dev, wire.PurposeStatus, good)
	if _, err := c.Publish(ctx, st); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"signed by another key": signedStatus(t, other, wire.PurposeStatus, good),
		"another purpose":       signedStatus(t, dev, "comms:message", good),
		"no version":            signedStatus(t, dev, wire.PurposeStatus, wire.Status{HeldCount: 0}),
		"held count too low":    signedStatus(t, dev, wire.PurposeStatus, wire.Status{Version: "1", Held: good.Held}),
		"not a Governed Object": []byte(`{"version":"1"}`),
	} {
		bad := h.state(t, dev, c.Hello(), "sleep", deviceOpts{})
		bad.Status = b
		if _, err := c.Publish(ctx, bad); err == nil {
			t.Errorf("status %s accepted", name)
		}
	}
	if _, err := c.Publish(ctx, h.state(t, dev, c.Hello(), "sleep", deviceOpts{})); err != nil {
		t.Fatal(err)
	}
	kept, err := h.states.Get(ctx, dev.DID().String())
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseStatus(kept.Status, dev.DID())
	if err != nil {
		t.Fatalf("kept status: %v", err)
	}
	if got.Version != "1.2.3" || got.Board != "rpi4" || !got.Halted || got.HeldCount != 1 || got.Held[0].Key != "did:key:zS k1" {
		t.Errorf("kept status = %+v, want the one published", got)
	}
}
