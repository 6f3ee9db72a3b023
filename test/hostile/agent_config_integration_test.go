//go:build integration

package hostile

import (
	"strings"
	"testing"
	"time"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestAgentConfigBounds: numbers outside their range, a duplicate member,
// a relative handler path and a relay that is not http(s) are refused at
// start (exit 1) with the member and the range named; nothing is made in
// the data directory.
func TestAgentConfigBounds(t *testing.T) {
	tests := []struct {
		name, config string
		flags        []string
		says         string
	}{
		{"keyPackages 100000000", `{"version": 1, "keyPackages": 100000000}`, nil, `"keyPackages" 100000000 outside 0..256`},
		{"window 10000h", `{"version": 1}`, []string{"--window-length", "10000h"}, `"window.length" (or --window-length) 10000h0m0s outside 1s..1h0m0s`},
		{"negative maxLifetime", `{"version": 1, "maxLifetime": "-1h"}`, nil, `"maxLifetime" -1h0m0s outside`},
		{"negative batchSize", `{"version": 1, "batchSize": -1}`, nil, `"batchSize" -1 outside 0..1000`},
		{"duplicate member", `{"version": 1, "mode": "sleep", "mode": "always_on"}`, nil, `duplicate member "mode"`},
		{"duplicate nested member", `{"version": 1, "window": {"length": "5m", "length": "50m"}}`, nil, `duplicate member "length" in the object at /window`},
		{"relative handler path", `{"version": 1}`, []string{"--handler", "comms:*=exec:bin/on-message"}, `exec.path "bin/on-message" is not an absolute path`},
		{"file relay", `{"version": 1}`, []string{"--relay", "file:///etc/passwd"}, `the scheme is "file", not http or https`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := agNewDevice(t)
			d.writeConfig(tt.config)
			d.run(d.args(tt.flags...)...).want(t, 1, tt.says)
			if exists(d.db) {
				t.Fatal("a refused configuration made a store")
			}
		})
	}
}

// TestAgentStopsDuringKeyPackages: SIGTERM while the agent makes the
// largest pool it takes (256 KeyPackages) ends it promptly and cleanly,
// and its store opens again afterwards.
func TestAgentStopsDuringKeyPackages(t *testing.T) {
	d := agNewDevice(t)
	d.writeConfig(`{"version": 1, "keyPackages": 256}`)
	start := time.Now()
	r := d.runUntil(func() bool { return exists(d.db) }, d.args()...)
	if r.code != 0 {
		t.Fatalf("exit %d after SIGTERM\n%s", r.code, r.stderr)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("start to stop took %v", took)
	}
	d.writeConfig(`{"version": 1}`)
	r = d.run(append([]string{"status"}, d.args()...)...)
	if r.code != 0 {
		t.Fatalf("status after the stop: exit %d\n%s", r.code, r.stderr)
	}
}

// TestAgentRefillCountBounded: torporctl refuses refill-keypackages
// --count 2000000 before it sends anything, with the device's own range
// (the device refuses the same command from any other sender: its
// manage.DecodeArgs check).
func TestAgentRefillCountBounded(t *testing.T) {
	_, stderr, err := ctl(t, "device", "refill-keypackages", "--count", "2000000", "--broker", "mqtt://127.0.0.1:9", "pi-7")
	if err == nil || !contains(stderr, "count 2000000 outside 0..256") {
		t.Fatalf("torporctl device refill-keypackages --count 2000000: %v\n%s", err, stderr)
	}
	if contains(stderr, "127.0.0.1:9") {
		t.Fatalf("torporctl dialled the broker before refusing:\n%s", stderr)
	}
}
