package relay

import (
	"context"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// enrolment signs an enrolment of dev by owner, issued at at, living ttl,
// with purpose.
func enrolment(tb testing.TB, owner *did.PrivateKey, dev did.DID, at time.Time, ttl time.Duration, purpose string) []byte {
	tb.Helper()
	o, err := governed.Sign(owner, governed.Template{IssuedAt: at, Semantic: governed.Semantic{Schema: "urn:torpor:enrolment"},
		Payload: wire.EnrolmentPayload{Device: dev.String()}, Purpose: purpose, TTL: ttl})
	if err != nil {
		tb.Fatal(err)
	}
	b, _ := o.MarshalJSON()
	return b
}

// TestOwnerEnrolment: a device that publishes its owner's enrolment is
// admitted at once on a relay that trusts the owner, and its link is
// dropped so that it links again for the relay's bounds; an enrolment by
// another key, expired, of another device or with another purpose leaves
// the device on probation (and is counted).
func TestOwnerEnrolment(t *testing.T) {
	owner, stranger := didtest.Key(t, 40), didtest.Key(t, 41)
	h := newHarness(t, func(c *Config) { c.Access.Owners = []did.DID{owner.DID()} })
	other := didtest.Key(t, 49).DID()
	refused := map[string]func(dev did.DID) []byte{
		"a stranger's": func(dev did.DID) []byte { return enrolment(t, stranger, dev, t0, time.Hour, wire.PurposeEnrolment) },
		"expired": func(dev did.DID) []byte {
			return enrolment(t, owner, dev, t0.Add(-2*time.Hour), time.Hour, wire.PurposeEnrolment)
		},
		"another device's": func(did.DID) []byte { return enrolment(t, owner, other, t0, time.Hour, wire.PurposeEnrolment) },
		"another purpose":  func(dev did.DID) []byte { return enrolment(t, owner, dev, t0, time.Hour, wire.PurposeRetirement) },
	}
	n := byte(50)
	for name, make := range refused {
		dev := didtest.Key(t, n)
		n++
		c := h.device(t, dev, "sleep", deviceOpts{})
		st := h.state(t, dev, c.Hello(), "sleep", deviceOpts{})
		st.Enrolment = make(dev.DID())
		if _, err := c.Publish(context.Background(), st); err != nil {
			t.Fatalf("%s enrolment: publish %v, want the state stored on probation", name, err)
		}
		if ok, _ := h.states.Admitted(context.Background(), dev.DID().String()); ok {
			t.Errorf("%s enrolment admitted the device", name)
		}
	}
	if v := labelledCounter(t, h.relay, "torpor_relay_cap_refusals_total", map[string]string{"cap": "enrolment"}); v != float64(len(refused)) {
		t.Errorf("enrolments refused: counted %v, want %d", v, len(refused))
	}
	dev := didtest.Key(t, 42)
	c := h.device(t, dev, "sleep", deviceOpts{})
	st := h.state(t, dev, c.Hello(), "sleep", deviceOpts{})
	st.Enrolment = enrolment(t, owner, dev.DID(), t0, time.Hour, wire.PurposeEnrolment)
	if _, err := c.Publish(context.Background(), st); err != nil {
		t.Fatalf("publish with the owner's enrolment: %v", err)
	}
	if ok, err := h.states.Admitted(context.Background(), dev.DID().String()); !ok || err != nil {
		t.Fatalf("the owner's enrolment: admitted %v (%v), want admitted", ok, err)
	}
	<-h.relay.Link().Gone(dev.DID().String())
	again, err := link.Dial(context.Background(), link.Config{RelayURL: h.srv.URL, Key: dev, Clock: h.clk})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got, want := again.Hello(), h.relay.cfg.Limits.Bounds; got.MaxMessages != want.MaxMessages {
		t.Errorf("the enrolled device's next hello: %d messages, want the relay's %d", got.MaxMessages, want.MaxMessages)
	}
}
