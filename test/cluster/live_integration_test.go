//go:build integration

package cluster

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// TestLiveAcrossRelays: a device linked to relay 1 answers live requests
// taken by relays 2 and 3 (forwarded over NATS request/reply), including
// 30 at once; when it links again through relay 3, relay 1 drops the
// older link and a request through relay 1 reaches it on relay 3.
func TestLiveAcrossRelays(t *testing.T) {
	f := startFleet(t, 3)
	dev, sender := relaytest.Key(t, 11), relaytest.Key(t, 12)
	agent, tok := dev.DID().String(), relaytest.Token(t, sender, publicURL)
	first := liveDevice(t, f.relays[0].addr, dev, "first")
	want := `{"answeredBy":"first","from":"` + sender.DID().String() + `"}`
	results := make(chan string, 30)
	for i := range 30 {
		go func() {
			status, b := sendRaw(f.relays[1+i%2].addr, agent, tok)
			results <- status + " " + b
		}()
	}
	for range 30 {
		if got := <-results; got != "200 "+want {
			t.Errorf("live request through another relay = %s, want 200 %s", got, want)
		}
	}
	liveDevice(t, f.relays[2].addr, dev, "second")
	select {
	case <-first.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("relay 1 kept the older link after the device linked through relay 3")
	}
	if status, b := sendRaw(f.relays[0].addr, agent, tok); status != "200" || !strings.Contains(b, `"answeredBy":"second"`) {
		t.Errorf("request through relay 1 after the relink = %s %s, want 200 from the link on relay 3", status, b)
	}
}

// liveDevice links dev (always_on) to the relay at addr; it answers every
// live request with name and the caller's DID.
func liveDevice(t *testing.T, addr string, dev *did.PrivateKey, name string) *link.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := link.Dial(ctx, link.Config{RelayURL: addr, Audience: publicURL, Key: dev,
		Handler: func(_ context.Context, req wire.Request) wire.Response {
			return wire.Response{Status: 200, ContentType: "application/json", Body: []byte(`{"answeredBy":"` + name + `","from":"` + req.From + `"}`)}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	b := c.Hello()
	raw := relaytest.SignedCard(t, publicURL, dev, a2a.CardOptions{Name: name, OfflineMode: "always_on", Bounds: &b})
	if _, err := c.Publish(ctx, wire.State{Mode: "always_on", Card: raw}); err != nil {
		t.Fatal(err)
	}
	return c
}

// sendRaw sends one request and returns the status and the body as text.
func sendRaw(addr, agent, tok string) (string, string) {
	status, b, err := relaytest.Exchange(client, addr+"/a/"+agent+"/a2a/jsonrpc", "Bearer "+tok, body("live", 10))
	if status == 0 {
		return "error", err.Error()
	}
	return strconv.Itoa(status), string(b)
}
