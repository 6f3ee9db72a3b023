package link

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// TestChallengeForAnotherOrigin: the device does not sign a challenge that
// names another origin than the relay it dialled (a relay passing on
// another relay's challenge would otherwise get a proof it can use there).
func TestChallengeForAnotherOrigin(t *testing.T) {
	proofs := make(chan []byte, 1)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{wire.Subprotocol}})
		if err != nil {
			return
		}
		defer ws.CloseNow()
		b, _ := wire.Encode(&wire.Frame{T: wire.FrameChallenge, Challenge: &wire.Challenge{
			Nonce: make([]byte, wire.NonceSize), Origin: "https://other-relay.example", Time: 1}})
		ws.Write(r.Context(), websocket.MessageBinary, b)
		if _, b, err := ws.Read(r.Context()); err == nil {
			if f, err := wire.Decode(b); err == nil {
				proofs <- f.Proof
			}
		}
	}))
	defer srv.Close()
	_, err := Dial(context.Background(), Config{RelayURL: srv.URL, Key: didtest.Key(t, 1)})
	if err == nil || !strings.Contains(err.Error(), "other-relay.example") {
		t.Errorf("Dial = %v, want a refused challenge for another origin", err)
	}
	<-done // the relay read what the device sent, or saw it close
	select {
	case p := <-proofs:
		t.Errorf("the device sent a proof (%d bytes) for another relay's challenge", len(p))
	default:
	}
}

// TestDialHandshakeDeadline: a relay that accepts the upgrade and then
// sends nothing (or trickles) ends Dial after HandshakeTimeout on the
// link's clock, whatever the caller's context allows, with
// ErrHandshakeTimeout.
func TestDialHandshakeDeadline(t *testing.T) {
	upgraded := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{wire.Subprotocol}})
		if err != nil {
			return
		}
		defer ws.CloseNow()
		close(upgraded)
		ws.Read(r.Context()) // no challenge, ever
	}))
	defer srv.Close()
	clk := clocktest.New(time.Unix(1_800_000_000, 0))
	done := make(chan error, 1)
	go func() {
		_, err := Dial(context.Background(), Config{RelayURL: srv.URL, Key: didtest.Key(t, 1), Clock: clk})
		done <- err
	}()
	<-upgraded // Dial waits for the challenge; its deadline's timer exists
	clk.Advance(HandshakeTimeout - time.Second)
	select {
	case err := <-done:
		t.Fatalf("Dial ended before HandshakeTimeout: %v", err)
	default:
	}
	clk.Advance(time.Second)
	if err := <-done; !errors.Is(err, ErrHandshakeTimeout) {
		t.Fatalf("Dial = %v, want ErrHandshakeTimeout", err)
	}
}

// TestIdleTimeoutFollowsThePingsAskedFor: a link reads itself as dead
// after two of the ping intervals it asked the relay for and 15 s;
// IdleTimeout when it asked for none.
func TestIdleTimeoutFollowsThePingsAskedFor(t *testing.T) {
	tests := []struct {
		ask, want time.Duration
	}{
		{0, IdleTimeout},
		{wire.MaxPingInterval, 2*wire.MaxPingInterval + 15*time.Second},
		{40 * time.Second, 95 * time.Second},
		{time.Second, IdleTimeout},                           // the relay pings every wire.PingInterval at most
		{time.Hour, 2*wire.MaxPingInterval + 15*time.Second}, // and every wire.MaxPingInterval at least
	}
	for _, tt := range tests {
		c := Config{PingInterval: tt.ask}
		if got := c.idleTimeout(); got != tt.want {
			t.Errorf("Config{PingInterval: %v}.idleTimeout() = %v, want %v", tt.ask, got, tt.want)
		}
	}
}
