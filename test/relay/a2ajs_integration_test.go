//go:build integration

package relay

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// jsResult is what test/relay/node/send.mjs prints: what the @a2a-js/sdk
// client reported to its caller.
type jsResult struct {
	Version               string         `json:"version"`
	CardInterfaces        []string       `json:"cardInterfaces"`
	SecuritySchemes       map[string]any `json:"securitySchemes"`
	ClientProtocolVersion string         `json:"clientProtocolVersion"`
	OK                    bool           `json:"ok"`
	Error                 struct {
		Name    string         `json:"name"`
		Message string         `json:"message"`
		Code    float64        `json:"code"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

// nodeDir returns node and test/relay/node, where the SDK is installed
// (scripts/setup.sh).
func nodeDir(t *testing.T) (node, dir string) {
	node = testenv.RequireTool(t, "node")
	_, file, _, _ := runtime.Caller(0)
	dir = filepath.Join(filepath.Dir(file), "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk")); err != nil {
		testenv.Unavailable(t, "test/relay/node/node_modules lacks @a2a-js/sdk; run scripts/setup.sh")
	}
	return node, dir
}

// TestA2AJSClientAgainstSleepingAgent drives the @a2a-js/sdk 1.3.0 client
// (from npm, installed by scripts/setup.sh) against an agent asleep behind
// the real torpor-relay, with the A2A v1.0 and v0.3 request shapes, and
// asserts what the client tells its caller. For a Governed Object it
// reports the relay's JSON-RPC error: code -32003, which the SDK names
// PushNotificationNotSupportedError (A2A's meaning of -32003), message
// "asleep, try later" and data {error: agent_asleep, queued: true,
// retryAfterSec}; for plain text, which the agent never takes, the agent's
// own answer, -32602 "object rejected", and nothing is queued. docs/a2a.md
// records both.
func TestA2AJSClientAgainstSleepingAgent(t *testing.T) {
	node, dir := nodeDir(t)
	p := startRelay(t, t.TempDir())
	dev, alice := relaytest.Key(t, 1), relaytest.Key(t, 2)
	publish(t, p.URL, dev, "hourly_wake")
	base := p.URL + "/a/" + dev.DID().String()
	tok := relaytest.Token(t, alice, p.URL)

	for _, version := range []string{"1.0", "0.3"} {
		t.Run("v"+version, func(t *testing.T) {
			r := runNode(t, node, dir, base, tok, version, string(objectData(t, alice)))
			if r.ClientProtocolVersion != version {
				t.Errorf("client spoke %q, want %q (card interfaces %v)", r.ClientProtocolVersion, version, r.CardInterfaces)
			}
			checkJSAsleep(t, r)
			r = runNode(t, node, dir, base, tok, version)
			if e := r.Error; r.OK || e.Name != "RequestMalformedError" || e.Code != -32602 || e.Message != "object rejected" {
				t.Errorf("text: ok %v, error %s %v %q; want RequestMalformedError -32602 \"object rejected\"", r.OK, e.Name, e.Code, e.Message)
			}
		})
	}
	t.Run("createFromUrl", func(t *testing.T) { createFromURL(t, node, dir, base, tok) })

	// The Governed Objects were queued, as sent, for the device to drain;
	// the text messages were not.
	var methods []string
	for _, r := range pullAll(t, p.URL, dev) {
		var env struct {
			Method string `json:"method"`
		}
		json.Unmarshal(r.Body, &env)
		methods = append(methods, env.Method)
		if r.From != alice.DID().String() {
			t.Errorf("record %d from %s, want the token's DID", r.Seq, r.From)
		}
	}
	if len(methods) != 2 || methods[0] != "SendMessage" || methods[1] != "message/send" {
		t.Errorf("queued methods %v, want [SendMessage message/send]", methods)
	}
}

// checkJSAsleep checks the SDK's report of a message queued for a sleeping
// agent: the error's data carries queued and retryAfterSec.
func checkJSAsleep(t *testing.T, r jsResult) {
	t.Helper()
	if r.OK {
		t.Fatal("the SDK reported success for a message to a sleeping agent")
	}
	e := r.Error
	if e.Name != "PushNotificationNotSupportedError" || e.Code != -32003 || e.Message != "asleep, try later" {
		t.Errorf("error = %s %v %q, want PushNotificationNotSupportedError -32003 \"asleep, try later\"", e.Name, e.Code, e.Message)
	}
	if e.Data["error"] != "agent_asleep" || e.Data["queued"] != true {
		t.Errorf("error data = %v, want error agent_asleep, queued true", e.Data)
	}
	if ra, _ := e.Data["retryAfterSec"].(float64); ra < 1 || ra > 3600 {
		t.Errorf("retryAfterSec = %v, want 1..3600", e.Data["retryAfterSec"])
	}
}

// createFromURL hands the agent's base URL to the SDK's createFromUrl, as
// docs/a2a.md tells A2A developers to: with its trailing slash the SDK
// finds the card. Without it, WHATWG URL resolution drops the DID and the
// SDK asks /a/.well-known/agent-card.json, which names no agent (the relay
// answers 404 no_agent_in_path; transport/relay TestCardURLWithoutAgent).
func createFromURL(t *testing.T, node, dir, base, tok string) {
	for _, tt := range []struct {
		base string
		ok   bool
	}{{base + "/", true}, {base, false}} {
		r := runNode(t, node, dir, tt.base, tok, "from-url")
		switch {
		case tt.ok && (!r.OK || r.ClientProtocolVersion != "1.0"):
			t.Errorf("createFromUrl(%q): ok %v, protocol %q, error %q", tt.base, r.OK, r.ClientProtocolVersion, r.Error.Message)
		case !tt.ok && (r.OK || !strings.Contains(r.Error.Message, "/a/.well-known/agent-card.json: 404")):
			t.Errorf("createFromUrl(%q): ok %v, error %q; want the 404 of /a/.well-known/agent-card.json", tt.base, r.OK, r.Error.Message)
		}
	}
}

// runNode runs send.mjs with args and returns what it printed.
func runNode(t *testing.T, node, dir string, args ...string) jsResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"send.mjs"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node send.mjs: %v\n%s", err, out)
	}
	var r jsResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	t.Logf("the SDK reported: %s", out)
	return r
}

// TestA2AJSResolver: @a2a-js/sdk's own card resolver reads the card the
// device signed (it sends A2A-Version: 1.0), and, with legacyCompat, the
// card's A2A 0.3 view the relay serves to a request without the header:
// both name the JSON-RPC endpoint and DID Bearer as an HTTP bearer scheme.
func TestA2AJSResolver(t *testing.T) {
	node, dir := nodeDir(t)
	p := startRelay(t, t.TempDir())
	dev := relaytest.Key(t, 1)
	publish(t, p.URL, dev, "hourly_wake")
	base := p.URL + "/a/" + dev.DID().String()
	endpoint := base + "/a2a/jsonrpc"
	for mode, wantIfaces := range map[string][]string{
		"card":     {"JSONRPC 1.0 " + endpoint, "JSONRPC 0.3 " + endpoint},
		"card-0.3": {"JSONRPC 0.3.0 " + endpoint}, // the view's protocolVersion
	} {
		t.Run(mode, func(t *testing.T) {
			r := runNode(t, node, dir, base+"/", "unused", mode)
			if !r.OK || !slices.Equal(r.CardInterfaces, wantIfaces) {
				t.Errorf("ok %v, interfaces %q, error %q; want %q", r.OK, r.CardInterfaces, r.Error.Message, wantIfaces)
			}
			s, _ := json.Marshal(r.SecuritySchemes["atomDidBearer"])
			for _, want := range []string{`"scheme":"bearer"`, `"bearerFormat":"AtomDID"`, `docs/a2a.md`} {
				if !strings.Contains(strings.ToLower(string(s)), strings.ToLower(want)) {
					t.Errorf("atomDidBearer as the SDK read it: %s; want %s", s, want)
				}
			}
		})
	}
}
