package server

import (
	"context"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/link"
)

// TestDialWithAClockBehind: a device whose clock is an hour behind (a
// Raspberry Pi booted with fake-hwclock's time) issues a link token the
// relay refuses as expired; the device issues it again at the time of the
// relay's 401 (its Date header) and links, and the relay's time from the
// challenge is there for the device to judge expiry by.
func TestDialWithAClockBehind(t *testing.T) {
	tests := []struct {
		name   string
		offset time.Duration
		tokens int
	}{
		{"an hour behind", -time.Hour, 2},
		{"an hour ahead", time.Hour, 2},
		{"in step", 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			dev := clocktest.New(time.Now().Add(tt.offset))
			c, err := link.Dial(context.Background(), link.Config{RelayURL: h.http.URL, Key: didtest.Key(t, 1), Clock: dev})
			if err != nil {
				t.Fatalf("Dial with a device clock %v off: %v", tt.offset, err)
			}
			defer c.Close()
			<-h.agents.events
			relay, local := c.RelayTime()
			if d := time.Since(relay); d < 0 || d > 3*time.Second {
				t.Errorf("relay time %v is %v from the relay's clock, want within a second or two behind", relay, d)
			}
			if !local.Equal(dev.Now()) {
				t.Errorf("local reading %v, want the device clock's %v", local, dev.Now())
			}
			if _, sent, received := c.RelayExchange(); sent.IsZero() || sent.After(received) || !received.Equal(local) {
				t.Errorf("round trip sent %v, received %v; want a request sent before the challenge arrived at %v", sent, received, local)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.tokens) != tt.tokens {
				t.Errorf("%d upgrade requests, want %d", len(h.tokens), tt.tokens)
			}
		})
	}
}

// TestDialRefusedNotRetriedInStep: a refusal that is not about the
// device's clock (a token for another audience) is not retried.
func TestDialRefusedNotRetriedInStep(t *testing.T) {
	h := newHarness(t)
	_, err := link.Dial(context.Background(), link.Config{RelayURL: h.http.URL, Key: didtest.Key(t, 1), Audience: "https://elsewhere.example"})
	if err == nil {
		t.Fatal("Dial with a token for another audience succeeded")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.tokens) != 1 {
		t.Errorf("%d upgrade requests, want 1 (no retry when the clocks agree)", len(h.tokens))
	}
}

// TestRefusalDatedByTheRelaysClock: the 401 is dated by the clock that
// checked the token (an injected one here, far from the host's), so that
// a device an hour behind links on the second token, and the challenge
// states the same clock's time.
func TestRefusalDatedByTheRelaysClock(t *testing.T) {
	h := newHarness(t)
	relay := clocktest.New(time.Date(2031, 3, 1, 9, 0, 0, 0, time.UTC))
	h.srv.Clock, h.srv.Verifier.Clock = relay, relay
	dev := clocktest.New(relay.Now().Add(-time.Hour))
	c, err := link.Dial(context.Background(), link.Config{RelayURL: h.http.URL, Key: didtest.Key(t, 1), Clock: dev})
	if err != nil {
		t.Fatalf("Dial an hour behind a relay on an injected clock: %v", err)
	}
	defer c.Close()
	<-h.agents.events
	if at, _ := c.RelayTime(); !at.Equal(relay.Now()) {
		t.Errorf("relay time %v, want the relay clock's %v", at, relay.Now())
	}
}
