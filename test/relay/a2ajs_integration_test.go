//go:build integration

package relay

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// jsResult is what test/relay/node/send.mjs prints: what the @a2a-js/sdk
// client reported to its caller.
type jsResult struct {
	Version               string   `json:"version"`
	CardInterfaces        []string `json:"cardInterfaces"`
	ClientProtocolVersion string   `json:"clientProtocolVersion"`
	OK                    bool     `json:"ok"`
	Error                 struct {
		Name    string         `json:"name"`
		Message string         `json:"message"`
		Code    float64        `json:"code"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

// TestA2AJSClientAgainstSleepingAgent drives the @a2a-js/sdk 1.3.0 client
// (from npm, installed by scripts/setup.sh) against an agent asleep behind
// the real torpor-relay, with the A2A v1.0 and v0.3 request shapes, and
// asserts what the client tells its caller. It reports the relay's
// JSON-RPC error: code -32003, which the SDK names
// PushNotificationNotSupportedError (A2A's meaning of -32003), message
// "asleep, try later" and data {error: agent_asleep, queued: true,
// retryAfterSec}. docs/relay.md records this.
func TestA2AJSClientAgainstSleepingAgent(t *testing.T) {
	node := testenv.RequireTool(t, "node")
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk")); err != nil {
		testenv.Unavailable(t, "test/relay/node/node_modules lacks @a2a-js/sdk; run scripts/setup.sh")
	}
	p := startRelay(t, t.TempDir())
	dev, alice := testKey(t, 1), testKey(t, 2)
	publish(t, p.url, dev, "hourly_wake")
	base := p.url + "/a/" + dev.DID().String()

	for _, version := range []string{"1.0", "0.3"} {
		t.Run("v"+version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "send.mjs", base, token(t, alice, p.url), version)
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
			if r.ClientProtocolVersion != version {
				t.Errorf("client spoke %q, want %q (card interfaces %v)", r.ClientProtocolVersion, version, r.CardInterfaces)
			}
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
		})
	}

	// Both were queued, as sent, for the device to drain.
	recs := pullAll(t, p.url, dev)
	var methods []string
	for _, r := range recs {
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
