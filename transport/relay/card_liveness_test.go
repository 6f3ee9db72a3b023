package relay

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/pulse"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// mustPulse signs pulse seq of key's chain, following prev (nil for the
// first).
func mustPulse(tb testing.TB, key *did.PrivateKey, seq uint64, prev []byte, next time.Time) []byte {
	tb.Helper()
	p := pulse.Pulse{Agent: key.DID(), Seq: seq, At: t0, NextWake: next, Mode: "hourly_wake"}
	if prev != nil {
		p.Prev = pulse.Hash(prev)
	}
	doc, err := pulse.Sign(key, p)
	if err != nil {
		tb.Fatal(err)
	}
	return doc
}

// TestCardLivenessMatchesThePulse: a card with the liveness extension is
// accepted only when it names the pulse the relay will serve and the next
// wake published; the relay serves the two together.
func TestCardLivenessMatchesThePulse(t *testing.T) {
	h := newHarness(t, nil)
	key, other := didtest.Key(t, 1), didtest.Key(t, 2)
	next := t0.Add(11 * time.Minute)
	c, err := link.Dial(context.Background(), link.Config{RelayURL: h.srv.URL, Key: key, Clock: h.clk})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cp := cardPublisher{t: t, h: h, c: c, key: key, base: h.srv.URL + "/a/" + key.DID().String()}
	for _, tt := range livenessCases(t, h, key, other, next) {
		var err error
		if tt.noCard {
			_, err = c.Publish(context.Background(), wire.State{Mode: "hourly_wake", Window: window11, Pulse: tt.pulse, NextWake: tt.nextWake.Unix()})
		} else {
			err = cp.publish(tt.pulse, tt.lv, tt.nextWake, tt.edit)
		}
		if tt.want == "" && err != nil {
			t.Errorf("%s: publish: %v, want accepted", tt.name, err)
		}
		if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: publish: %v, want refused saying %q", tt.name, err, tt.want)
		}
	}

	// What the relay serves: the card naming pulse 2 and the next window,
	// and pulse 2 itself.
	card := h.getCard(t, "/a/"+key.DID().String()+a2a.CardPath, "1.0")
	if err := a2a.VerifyCard(card.body, key.DID()); err != nil {
		t.Fatalf("served card: %v", err)
	}
	parsed, err := a2a.ParseCard(card.body)
	if err != nil {
		t.Fatal(err)
	}
	lv, ok, err := parsed.Liveness()
	served := h.get(t, "/a/"+key.DID().String()+"/pulse")
	if err != nil || !ok || lv.Pulse.Seq != 2 || lv.Pulse.Hash != pulse.Hash(served.body) || !lv.NextWindow.Start.Equal(next) {
		t.Errorf("served card's liveness %+v, %v, %v; want pulse 2 (hash %s) and the window at %v", lv, ok, err, pulse.Hash(served.body), next)
	}
}

// livenessCase is one publication of TestCardLivenessMatchesThePulse, in
// order: later cases build on what earlier ones left at the relay.
type livenessCase struct {
	name     string
	pulse    []byte
	lv       *a2a.Liveness
	nextWake time.Time
	edit     func(*a2a.Card)
	noCard   bool   // the frame carries no card
	want     string // a phrase of the refusal; "" accepts
}

// livenessCases returns the cases for key, whose pulses 1 and 2 announce
// the wake next; other is another agent.
func livenessCases(t *testing.T, h *harness, key, other *did.PrivateKey, next time.Time) []livenessCase {
	p1 := mustPulse(t, key, 1, nil, next)
	p2 := mustPulse(t, key, 2, p1, next)
	good := a2a.Liveness{NextWindow: &a2a.NextWindow{Start: next, Length: 5 * time.Minute}, Pulse: a2a.PulseRef{Seq: 1, Hash: pulse.Hash(p1)}}
	with := func(change func(*a2a.Liveness)) *a2a.Liveness {
		l := good
		w := *good.NextWindow
		l.NextWindow = &w
		change(&l)
		return &l
	}
	return []livenessCase{
		{"no pulse published", nil, &good, next, nil, false, "no pulse was published"},
		{"pulse not a pulse", []byte(`{"seq":1}`), &good, next, nil, false, "published pulse is invalid"},
		{"pulse by another agent", mustPulse(t, other, 1, nil, next), with(func(l *a2a.Liveness) {
			l.Pulse.Hash = pulse.Hash(mustPulse(t, other, 1, nil, next))
		}), next, nil, false, "is by " + other.DID().String()},
		{"other hash", p1, with(func(l *a2a.Liveness) { l.Pulse.Hash = pulse.Hash(p2) }), next, nil, false, "with hash"},
		{"other seq", p1, with(func(l *a2a.Liveness) { l.Pulse.Seq = 2 }), next, nil, false, "published pulse is 1"},
		{"another agent's pulse URL", p1, with(func(l *a2a.Liveness) {
			l.Pulse.URL = h.srv.URL + "/a/" + other.DID().String() + a2a.PulsePath
		}), next, nil, false, "not at …/a/" + key.DID().String() + "/pulse"},
		{"behind a path prefix", p1, with(func(l *a2a.Liveness) {
			l.Pulse.URL = "https://relay.example/torpor/a/" + key.DID().String() + a2a.PulsePath
		}), next, nil, false, ""},
		{"window at another time", p1, with(func(l *a2a.Liveness) { l.NextWindow.Start = next.Add(time.Hour) }), next, nil, false, "but the next wake is"},
		{"window without a next wake", p1, &good, time.Time{}, nil, false, "no next wake was published"},
		{"next wake without a window", p1, with(func(l *a2a.Liveness) { l.NextWindow = nil }), next, nil, false, "names no next window"},
		{"malformed params", p1, nil, next, func(card *a2a.Card) {
			card.Capabilities.Extensions = append(card.Capabilities.Extensions,
				a2a.Extension{URI: a2a.ExtLiveness, Description: "liveness", Params: json.RawMessage(`{"pulse":{"seq":1}}`)})
		}, false, "pulse.hash"},
		{"without the extension", p1, nil, next, nil, false, ""},
		{"consistent", p1, &good, next, nil, false, ""},
		// The relay still holds p1, and the card the agent published with
		// it: a frame with only a new pulse would leave that card naming an
		// older pulse.
		{"a newer pulse without its card", p2, nil, next, nil, true, "card disagrees"},
		{"a newer pulse with its card", p2, with(func(l *a2a.Liveness) { l.Pulse = a2a.PulseRef{Seq: 2, Hash: pulse.Hash(p2)} }), next, nil, false, ""},
		{"the card again, pulse held", nil, with(func(l *a2a.Liveness) { l.Pulse = a2a.PulseRef{Seq: 2, Hash: pulse.Hash(p2)} }), next, nil, false, ""},
	}
}

// cardPublisher publishes an agent's state over its link c.
type cardPublisher struct {
	t    *testing.T
	h    *harness
	c    *link.Client
	key  *did.PrivateKey
	base string // the agent's URL at the relay
}

// publish publishes a state with pulse doc (nil: none in the frame) and a
// card with lv (nil: without the extension; edit may change it).
func (p cardPublisher) publish(doc []byte, lv *a2a.Liveness, nextWake time.Time, edit func(*a2a.Card)) error {
	o := deviceOpts{pulse: doc, card: func(card *a2a.Card) {
		if lv != nil {
			l := *lv
			if l.Pulse.URL == "" {
				l.Pulse.URL = p.base + a2a.PulsePath
			}
			params, err := l.MarshalJSON()
			if err != nil {
				p.t.Fatal(err)
			}
			card.Capabilities.Extensions = append(card.Capabilities.Extensions, a2a.Extension{URI: a2a.ExtLiveness, Description: "liveness", Params: params})
		}
		if edit != nil {
			edit(card)
		}
	}}
	st := p.h.state(p.t, p.key, p.c.Hello(), "hourly_wake", o)
	if !nextWake.IsZero() {
		st.NextWake = nextWake.Unix()
	}
	_, err := p.c.Publish(context.Background(), st)
	return err
}
