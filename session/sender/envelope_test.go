package sender_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// presented reads the envelope a queued record's body presents.
func presented(t *testing.T, body []byte) (a2a.EnvelopeMetadata, bool) {
	t.Helper()
	req, err := a2a.ParseRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a2a.ParseSendMessage(req)
	if err != nil {
		t.Fatal(err)
	}
	em, ok, err := a2a.PresentedEnvelope(p.Message.Extensions, p.Message.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	return em, ok
}

// TestPeerEnvelopePresented: a Peer with an Envelope presents it on the
// objects sent in the pair session, not on the handshake, and the relay
// queues the message with the chain intact; without one nothing is
// presented.
func TestPeerEnvelopePresented(t *testing.T) {
	w := newWorld(t)
	c := w.publish(t)
	key := w.client.Key
	em := &a2a.EnvelopeMetadata{Passports: []string{"root.jws.x", "leaf.jws.y"}, Pulse: []byte(`{"seq":3}`)}
	p := w.peer()
	p.Envelope = em
	for _, peer := range []bool{true, false} {
		pp := w.peer()
		if peer {
			pp = p
		}
		obj := runtimetest.Object(t, key, "comms:message", t0, time.Hour, map[string]any{"with": peer})
		if _, err := w.client.Send(context.Background(), pp, obj); err != nil {
			t.Fatal(err)
		}
	}
	recs, _, err := c.Pull(context.Background(), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records queued, want the handshake and two objects", len(recs))
	}
	for i, want := range []bool{false, true, false} {
		got, ok := presented(t, recs[i].Body)
		if ok != want {
			t.Errorf("record %d presents an envelope: %v, want %v", i, ok, want)
		}
		if ok && (!slices.Equal(got.Passports, em.Passports) || string(got.Pulse) != string(em.Pulse)) {
			t.Errorf("record %d presents %+v, want %+v", i, got, em)
		}
	}
}
