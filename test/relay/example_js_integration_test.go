//go:build integration

package relay

import (
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/internal/relaytest"
)

// TestA2AJSExample runs docs/a2a.md's JavaScript example
// (test/relay/node/example.mjs) with a Governed Object against a real agent
// that is awake, which takes it, one that sleeps, whose relay queues it,
// with plain data, which the agent refuses either way, and with a bad token,
// which the relay refuses (401): the example's fetch wrapper reports the
// relay's answers as RelayAnswer kinds.
func TestA2AJSExample(t *testing.T) {
	node, dir := nodeDir(t)
	p := startRelay(t, t.TempDir())
	awake, asleep, alice := relaytest.Key(t, 7), relaytest.Key(t, 8), relaytest.Key(t, 2)
	awakeAgent(t, p.URL, awake)
	publish(t, p.URL, asleep, "hourly_wake")
	tok := relaytest.Token(t, alice, p.URL)
	plain, _ := json.Marshal(map[string]string{"note": "no Governed Object here"})

	tests := []struct {
		name, agent, token, data string
		ok                       bool
		want                     *regexp.Regexp
	}{
		{"awake", awake.DID().String(), tok, string(objectData(t, alice)), true, regexp.MustCompile(`^delivered: \{.*"accepted"`)},
		{"asleep", asleep.DID().String(), tok, string(objectData(t, alice)), true, regexp.MustCompile(`^queued: the device is back in about (\d+) s\n$`)},
		{"plain data", asleep.DID().String(), tok, string(plain), false, regexp.MustCompile(`^refused: RequestMalformedError: object rejected\n$`)},
		{"no token", asleep.DID().String(), "atom.bad.token", string(objectData(t, alice)), false,
			regexp.MustCompile(`^refused: asleep_enqueue_requires_auth \(401\): DID Bearer token refused`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "example.mjs", p.URL+"/a/"+tt.agent, tt.token, tt.data)
			cmd.Dir = dir
			out, err := cmd.Output()
			t.Logf("example.mjs printed: %s", out)
			if (err == nil) != tt.ok {
				t.Errorf("example.mjs: %v, want success %v", err, tt.ok)
			}
			m := tt.want.FindSubmatch(out)
			if m == nil {
				t.Fatalf("output %q does not match %s", out, tt.want)
			}
			if len(m) > 1 {
				if n, _ := strconv.Atoi(string(m[1])); n < 1 || n > 3600 {
					t.Errorf("retryAfterSec %d, want 1..3600", n)
				}
			}
		})
	}
	if recs := pullAll(t, p.URL, asleep); len(recs) != 1 {
		t.Errorf("%d records queued for the sleeping agent, want 1", len(recs))
	}
}
