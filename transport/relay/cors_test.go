package relay

import (
	"net/http"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/did/didtest"
)

// preflight sends the OPTIONS request a browser sends before a
// cross-origin request with an Authorization or A2A-Version header.
func (h *harness) preflight(tb testing.TB, path, origin, method string) resp {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodOptions, h.srv.URL+path, nil)
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", method)
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,a2a-version")
	return h.do(tb, req)
}

func TestCORSDefaults(t *testing.T) {
	h := newHarness(t, nil)
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	h.publishOffline(t, dev, "sleep", deviceOpts{})
	card := "/a/" + dev.DID().String() + "/.well-known/agent-card.json"
	rpc := "/a/" + dev.DID().String() + "/a2a/jsonrpc"

	// The card: any origin, preflight included (the SDKs send A2A-Version).
	r := h.preflight(t, card, "https://app.example", "GET")
	checkPreflight(t, r, "*", "GET, HEAD, OPTIONS")
	req, _ := http.NewRequest("GET", h.srv.URL+card, nil)
	req.Header.Set("Origin", "https://app.example")
	r = h.do(t, req)
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "*" || !varyOrigin(r.header) {
		t.Errorf("card GET: %d, Allow-Origin %q, Vary %q", r.status, r.header.Get("Access-Control-Allow-Origin"), r.header.Values("Vary"))
	}
	// JSON-RPC: no origin unless configured; the request itself still works
	// for clients that are not browsers.
	r = h.preflight(t, rpc, "https://app.example", "POST")
	if r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != "" || r.header.Get("Access-Control-Allow-Headers") != "" || !varyOrigin(r.header) {
		t.Errorf("JSON-RPC preflight without configured origins: %d %v", r.status, r.header)
	}
	r = h.post(t, dev.DID(), alice, "1.0", sendV1)
	if r.status != 503 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("JSON-RPC POST: %d, Allow-Origin %q", r.status, r.header.Get("Access-Control-Allow-Origin"))
	}
}

func TestCORSConfiguredOrigins(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.HTTP.CORSOrigins = []string{"https://app.example/"}
		c.HTTP.CardCORSOrigins = []string{"https://app.example", "https://other.example"}
	})
	dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
	h.publishOffline(t, dev, "hourly_wake", deviceOpts{})
	rpc := "/a/" + dev.DID().String() + "/a2a/jsonrpc"

	checkPreflight(t, h.preflight(t, rpc, "https://app.example", "POST"), "https://app.example", "POST, OPTIONS")
	if r := h.preflight(t, rpc, "https://evil.example", "POST"); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("an origin not listed got %q", r.header.Get("Access-Control-Allow-Origin"))
	}
	checkPreflight(t, h.preflight(t, "/a/"+dev.DID().String()+"/pulse", "https://other.example", "GET"), "https://other.example", "GET, HEAD, OPTIONS")

	// The answer itself names the origin and lets the script read
	// Retry-After.
	req, _ := http.NewRequest("POST", h.srv.URL+rpc, strings.NewReader(sendV1))
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("A2A-Version", "1.0")
	tok, err := bearerIssue(alice, h.relay.cfg.PublicURL, h.clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	r := h.do(t, req)
	if r.status != 503 || r.header.Get("Access-Control-Allow-Origin") != "https://app.example" || !varyOrigin(r.header) ||
		!strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "Retry-After") {
		t.Errorf("POST: %d %v", r.status, r.header)
	}
}

func checkPreflight(t *testing.T, r resp, origin, methods string) {
	t.Helper()
	if r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != origin || r.header.Get("Access-Control-Allow-Methods") != methods || !varyOrigin(r.header) {
		t.Errorf("preflight: %d, Allow-Origin %q (want %q), Allow-Methods %q (want %q), Vary %q",
			r.status, r.header.Get("Access-Control-Allow-Origin"), origin, r.header.Get("Access-Control-Allow-Methods"), methods, r.header.Values("Vary"))
	}
	for _, want := range []string{"Authorization", "Content-Type", "A2A-Version", "A2A-Extensions", "X-A2A-Extensions"} {
		if !strings.Contains(r.header.Get("Access-Control-Allow-Headers"), want) {
			t.Errorf("Access-Control-Allow-Headers %q lacks %s", r.header.Get("Access-Control-Allow-Headers"), want)
		}
	}
}

func varyOrigin(h http.Header) bool {
	for _, v := range h.Values("Vary") {
		if v == "Origin" {
			return true
		}
	}
	return false
}

// TestCardURLWithoutAgent: @a2a-js/sdk resolves the card path against the
// base URL without its trailing slash to /a/.well-known/agent-card.json
// (test/relay runs the SDK). That URL names no agent; the answer says how
// to name one, to any origin.
func TestCardURLWithoutAgent(t *testing.T) {
	h := newHarness(t, nil)
	req, _ := http.NewRequest("GET", h.srv.URL+"/a/.well-known/agent-card.json", nil)
	req.Header.Set("Origin", "https://app.example")
	r := h.do(t, req)
	msg, _ := r.json["message"].(string)
	if r.status != 404 || r.json["error"] != "no_agent_in_path" || !strings.Contains(msg, "/a/<did>/") || r.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("%d %s %v", r.status, r.body, r.header)
	}
}

// TestAgentBaseURLs: an agent's base URL, with or without its trailing
// slash, and the well-known card URLs at the root answer JSON that gives
// the card's and the endpoint's URLs, not a bare text 404.
func TestAgentBaseURLs(t *testing.T) {
	h := newHarness(t, nil)
	dev := didtest.Key(t, 1).DID().String()
	base := h.relay.cfg.PublicURL + "/a/" + dev + "/"
	for path, want := range map[string][2]string{
		"/a/" + dev:                    {base + ".well-known/agent-card.json", base + "a2a/jsonrpc"},
		"/a/" + dev + "/":              {base + ".well-known/agent-card.json", base + "a2a/jsonrpc"},
		"/.well-known/agent.json":      {h.relay.cfg.PublicURL + "/a/{did}/.well-known/agent-card.json", h.relay.cfg.PublicURL + "/a/{did}/a2a/jsonrpc"},
		"/.well-known/agent-card.json": {h.relay.cfg.PublicURL + "/a/{did}/.well-known/agent-card.json", h.relay.cfg.PublicURL + "/a/{did}/a2a/jsonrpc"},
	} {
		r := h.get(t, path)
		if r.status != 404 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") || r.json["card"] != want[0] || r.json["endpoint"] != want[1] {
			t.Errorf("GET %s: %d %s %s, want 404 JSON with card %s and endpoint %s", path, r.status, r.header.Get("Content-Type"), r.body, want[0], want[1])
		}
	}
	if r := h.get(t, "/a/not-a-did/"); r.status != 404 || r.json["error"] != "unknown_agent" {
		t.Errorf("GET /a/not-a-did/: %d %s", r.status, r.body)
	}
}
