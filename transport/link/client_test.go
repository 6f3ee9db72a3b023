package link

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"

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
