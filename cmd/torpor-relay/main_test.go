package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
)

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name string
		argv []string
		ok   bool
		want func(*args) bool
	}{
		{"defaults", nil, true, func(a *args) bool {
			return a.listen == "127.0.0.1:8080" && a.mqtt.listen == "127.0.0.1:1883" && a.bounds.MaxMessages == 500 &&
				a.bounds.MaxBytes == 2<<20 && a.bounds.MaxPerPeer == 50 && a.bounds.TTL == 7*24*time.Hour && a.mqtt.maxExpiry == 30*24*time.Hour
		}},
		{"bounds", []string{"--max-messages", "10", "--ttl", "1h", "--allow-agent", "did:key:a", "--allow-agent", "did:key:b"}, true, func(a *args) bool {
			return a.bounds.MaxMessages == 10 && a.bounds.TTL == time.Hour && len(a.allowAgents) == 2
		}},
		{"cors", []string{"--cors-origin", "https://a.example", "--cors-origin", "https://b.example", "--card-cors-origin", "https://a.example"}, true, func(a *args) bool {
			return len(a.corsOrigins) == 2 && a.corsOrigins[1] == "https://b.example" && len(a.cardOrigins) == 1
		}},
		{"log level", []string{"--log-level", "debug"}, true, func(a *args) bool { return a.logLevel == slog.LevelDebug }},
		{"zero bound", []string{"--max-messages", "0"}, false, nil},
		{"tls half", []string{"--tls-cert", "c.pem"}, false, nil},
		{"stray argument", []string{"serve"}, false, nil},
		{"public origin", []string{"--public-url", "https://relay.example.org"}, true, func(a *args) bool { return a.publicURL == "https://relay.example.org" }},
		{"public URL without a scheme", []string{"--public-url", "relay.example.org"}, false, nil},
		{"public URL with a path", []string{"--public-url", "https://relay.example.org/torpor"}, false, nil},
		{"limits", []string{"--idle-timeout", "5s", "--max-conns", "10", "--trusted-proxy", "10.0.0.0/8", "--trusted-proxy", "192.0.2.1", "--keypackage-budget", "3"}, true, func(a *args) bool {
			return a.http.IdleTimeout == 5*time.Second && a.http.MaxConns == 10 && len(a.keyPackages.trustedProxies) == 2 && a.keyPackages.budget == 3 &&
				a.http.ReadTimeout == 30*time.Second && a.http.WriteTimeout == time.Minute && a.http.MinBodyRate == 1024
		}},
		{"zero max conns", []string{"--max-conns", "0"}, false, nil},
		{"negative timeout", []string{"--read-timeout", "-1s"}, false, nil},
		{"bad trusted proxy", []string{"--trusted-proxy", "proxy.example"}, false, nil},
		{"zero budget", []string{"--keypackage-budget", "0"}, false, nil},
		{"version skips the other checks", []string{"--version", "--max-messages", "0"}, true, func(a *args) bool { return a.version }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := parseArgs(tt.argv, io.Discard)
			if (err == nil) != tt.ok {
				t.Fatalf("parseArgs(%q) error = %v, want ok=%v", tt.argv, err, tt.ok)
			}
			if tt.ok && !tt.want(a) {
				t.Errorf("parseArgs(%q) = %+v", tt.argv, a)
			}
		})
	}
}

// TestRunServes starts the whole relay (stores, embedded broker, HTTP) on
// loopback ports, fresh, and checks it answers and stops, logging no
// ERROR and, when stopped, one INFO line and nothing after it.
func TestRunServes(t *testing.T) {
	relay, err := startRun(t, t.TempDir())
	if err != nil {
		t.Fatalf("run ended early: %v", err)
	}
	r, err := http.Get("http://" + relay.http + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]string
	json.NewDecoder(r.Body).Decode(&h)
	r.Body.Close()
	if h["status"] != "ok" || h["publicUrl"] != "http://"+relay.http || !strings.HasPrefix(h["mqttBroker"], "mqtt://127.0.0.1:") {
		t.Errorf("healthz = %v", h)
	}
	before := len(relay.logs.String())
	if err := relay.stop(); err != nil {
		t.Errorf("run = %v", err)
	}
	all := relay.logs.String()
	if strings.Contains(all, "level=ERROR") {
		t.Errorf("a fresh relay logged an ERROR:\n%s", all)
	}
	if stop := all[before:]; strings.Count(stop, "\n") != 1 || !strings.Contains(stop, `level=INFO msg="torpor-relay stopped" reason="context canceled"`) {
		t.Errorf("the stop logged %q, want one INFO line", stop)
	}
}

// TestTimeScale: --time-scale takes 1 to 100000 and names the flag and the
// range otherwise, as torpor-agent's does (clocktest.ScaleFlagCases).
func TestTimeScale(t *testing.T) {
	for _, tt := range clocktest.ScaleFlagCases {
		a, err := parseArgs([]string{"--time-scale", tt.In}, io.Discard)
		switch {
		case tt.WantErr == "" && (err != nil || a.timeScale != tt.Want):
			t.Errorf("parseArgs(--time-scale %s) = %v, want time scale %v", tt.In, err, tt.Want)
		case tt.WantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.WantErr)):
			t.Errorf("parseArgs(--time-scale %s) error = %v, want %q", tt.In, err, tt.WantErr)
		}
	}
	if a, err := parseArgs(nil, io.Discard); err != nil || a.timeScale != 1 || !a.timeEpoch.IsZero() {
		t.Errorf("parseArgs() = time scale %v epoch %v, %v; want 1 (real time) and no epoch by default", a.timeScale, a.timeEpoch, err)
	}
}

// TestTimeEpoch: --time-epoch takes an RFC 3339 time or Unix seconds, and
// names the flag and the forms otherwise.
func TestTimeEpoch(t *testing.T) {
	want := time.Date(2026, 12, 3, 18, 0, 0, 250e6, time.UTC)
	for _, in := range []string{"2026-12-03T18:00:00.25Z", "1796320800.25"} {
		a, err := parseArgs([]string{"--time-scale", "100", "--time-epoch", in}, io.Discard)
		if err != nil || !a.timeEpoch.Equal(want) {
			t.Errorf("parseArgs(--time-epoch %s) = %v, %v; want %v", in, a, err, want)
		}
	}
	_, err := parseArgs([]string{"--time-epoch", "yesterday"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `invalid value "yesterday" for flag -time-epoch: time epoch "yesterday": want an RFC 3339 time`) {
		t.Errorf("parseArgs(--time-epoch yesterday) = %v, want the flag and the forms named", err)
	}
}
