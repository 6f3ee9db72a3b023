//go:build integration

package relay

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	torpora2a "github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/a2arelay"
)

// TestA2AGoClient drives the official A2A Go SDK (a2a-go v0.3.3, A2A 0.3),
// through docs/a2a.md's Go example (Connect, Send), against the real relay:
// a real agent that is awake (package runtime) and one that sleeps. It
// checks what the SDK tells its caller:
//   - its own card resolver reads the card (the relay's A2A 0.3 view): the
//     JSON-RPC endpoint and DID Bearer as an HTTP bearer scheme;
//   - awake, a Governed Object gets the agent's message; asleep, the
//     a2arelay.Error in the SDK's error says queued, with Retry-After;
//   - plain text gets ErrInvalidParams ("object rejected") awake and
//     asleep alike, and is not queued;
//   - with no token, the relay's refusal and its reason.
func TestA2AGoClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := startRelay(t, t.TempDir())
	awake, asleep, alice := relaytest.Key(t, 5), relaytest.Key(t, 6), relaytest.Key(t, 2)
	awakeAgent(t, p.URL, awake)
	publish(t, p.URL, asleep, "hourly_wake")
	token := func(*http.Request) (string, error) { return relaytest.Token(t, alice, p.URL), nil }

	var object map[string]any
	if err := json.Unmarshal(objectData(t, alice), &object); err != nil {
		t.Fatal(err)
	}
	text := map[string]any{"note": "no Governed Object here"}

	t.Run("awake", func(t *testing.T) {
		client := connect(t, ctx, p.URL, awake, token)
		res, r, err := Send(ctx, client, object)
		if msg, ok := res.(*a2a.Message); err != nil || r.Kind != a2arelay.Delivered || !ok || msg.Role != a2a.MessageRoleAgent {
			t.Errorf("Send = %#v, %+v, %v; want the agent's message", res, r, err)
		}
		_, r, err = Send(ctx, client, text)
		if !errors.Is(err, a2a.ErrInvalidParams) || r.Kind != a2arelay.Delivered {
			t.Errorf("data without an object: %+v, %v; want ErrInvalidParams", r, err)
		}
	})
	t.Run("asleep", func(t *testing.T) {
		client := connect(t, ctx, p.URL, asleep, token)
		_, r, err := Send(ctx, client, object)
		if err != nil || r.Kind != a2arelay.Queued || r.Status != 503 || r.Reason != "agent_asleep" ||
			r.RetryAfter < time.Second || r.RetryAfter > time.Hour {
			t.Errorf("Send = %+v, %v; want queued, agent_asleep, RetryAfter 1 s..1 h", r, err)
		}
		_, r, err = Send(ctx, client, text)
		if !errors.Is(err, a2a.ErrInvalidParams) || r.Kind != a2arelay.Delivered {
			t.Errorf("data without an object: %+v, %v; want ErrInvalidParams, as awake", r, err)
		}
	})
	t.Run("no token", func(t *testing.T) {
		client := connect(t, ctx, p.URL, asleep, func(*http.Request) (string, error) { return "atom.bad.token", nil })
		_, r, err := Send(ctx, client, object)
		if err != nil || r.Kind != a2arelay.Refused || r.Status != 401 || r.Reason != "asleep_enqueue_requires_auth" || r.Message == "" {
			t.Errorf("Send = %+v, %v; want refused 401 asleep_enqueue_requires_auth", r, err)
		}
	})
	if recs := pullAll(t, p.URL, asleep); len(recs) != 1 || recs[0].From != alice.DID().String() {
		t.Errorf("queued for the sleeping agent: %d records; want the one Governed Object from Alice", len(recs))
	}
}

// TestA2AGoResolver: a2a-go's default resolver, which sends no A2A-Version
// header, reads the card; it failed with "unknown security scheme type" on
// the A2A 1.0 card, which the relay served to every client before. The
// view it reads is a2a.CardV03 of the card the device signed, which
// verifies.
func TestA2AGoResolver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := startRelay(t, t.TempDir())
	dev := relaytest.Key(t, 6)
	publish(t, p.URL, dev, "hourly_wake")
	base := p.URL + "/a/" + dev.DID().String()
	card, err := agentcard.DefaultResolver.Resolve(ctx, base)
	if err != nil {
		t.Fatalf("a2a-go's resolver: %v", err)
	}
	checkGoCard(t, card, base)

	// The signed card, for a client that asks for 1.0, and the view.
	req, _ := http.NewRequestWithContext(ctx, "GET", base+torpora2a.CardPath, nil)
	req.Header.Set("A2A-Version", "1.0")
	signed := getBody(t, req)
	if err := torpora2a.VerifyCard(signed, dev.DID()); err != nil {
		t.Errorf("the 1.0 card: %v", err)
	}
	want, err := torpora2a.CardV03(signed)
	if err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequestWithContext(ctx, "GET", base+torpora2a.CardPath, nil)
	if got := getBody(t, req); string(got) != string(want) {
		t.Errorf("the card without A2A-Version:\n%s\nwant CardV03 of the signed card:\n%s", got, want)
	}
}

func checkGoCard(t *testing.T, card *a2a.AgentCard, base string) {
	t.Helper()
	if card.URL != base+"/a2a/jsonrpc" || card.PreferredTransport != a2a.TransportProtocolJSONRPC {
		t.Errorf("card url %q, preferredTransport %q; want the JSON-RPC endpoint", card.URL, card.PreferredTransport)
	}
	s, ok := card.SecuritySchemes[torpora2a.SecuritySchemeDIDBearer].(a2a.HTTPAuthSecurityScheme)
	if !ok || s.Scheme != "bearer" || s.BearerFormat != torpora2a.BearerFormatDID || !strings.Contains(s.Description, "docs/a2a.md") {
		t.Errorf("security scheme %#v; want http bearer, bearerFormat AtomDID, a link to docs/a2a.md", card.SecuritySchemes[torpora2a.SecuritySchemeDIDBearer])
	}
	if len(card.Security) != 1 || card.Security[0][torpora2a.SecuritySchemeDIDBearer] == nil {
		t.Errorf("card security %v; want DID Bearer required", card.Security)
	}
	// The Autonomy Envelope entry (docs/envelope.md) reads as any other.
	i := slices.IndexFunc(card.Capabilities.Extensions, func(e a2a.AgentExtension) bool { return e.URI == torpora2a.ExtEnvelope })
	if i < 0 || card.Capabilities.Extensions[i].Params["scope"] != torpora2a.EnvelopeScopeV0 {
		t.Errorf("card extensions %+v; want %s with scope %s", card.Capabilities.Extensions, torpora2a.ExtEnvelope, torpora2a.EnvelopeScopeV0)
	}
}

func connect(t *testing.T, ctx context.Context, relay string, agent *did.PrivateKey, token func(*http.Request) (string, error)) *a2aclient.Client {
	t.Helper()
	base := relay + "/a/" + agent.DID().String()
	client, card, err := Connect(ctx, base, token)
	if err != nil {
		t.Fatal(err)
	}
	checkGoCard(t, card, base)
	return client
}

// getBody does req and returns the body of its 200 answer.
func getBody(t *testing.T, req *http.Request) []byte {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v", req.URL, resp.Status, err)
	}
	return b
}
