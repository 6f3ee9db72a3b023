package conffile

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/did"
)

// validBase is a complete configuration's members after "version", with
// the key file in dir; tests add or replace members after it.
func validBase(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	k, _ := did.NewKeyFromSeed(make([]byte, 32))
	keyFile := filepath.Join(dir, "agent.key")
	if err := did.SaveKey(keyFile, k, false); err != nil {
		t.Fatal(err)
	}
	return `"key": "` + keyFile + `", "dataDir": "` + dir + `", "relay": "http://r", "purposes": ["comms:*"]`
}

const okHandlers = `"handlers": [{"purpose": "comms:*", "exec": {"path": "/bin/true"}}]`

// TestBoundsRefused: every number outside its range, a relative handler
// path and a relay that is not http(s) are refused by Build, each naming
// the member and the range; the limits themselves are accepted.
func TestBoundsRefused(t *testing.T) {
	base := validBase(t)
	bad := map[string]string{
		`"keyPackages": 100000000`:       `"keyPackages" 100000000 outside 0..256`,
		`"keyPackages": -1`:              `"keyPackages" -1 outside 0..256`,
		`"batchSize": -5`:                `"batchSize" -5 outside 0..1000`,
		`"batchSize": 1000000`:           `"batchSize" 1000000 outside 0..1000`,
		`"window": {"length": "10000h"}`: `"window.length" (or --window-length) 10000h0m0s outside 1s..1h0m0s`,
		`"window": {"length": "-5m"}`:    `outside 1s..1h0m0s`,
		`"window": {"offset": "2h"}`:     `"window.offset" (or --window-offset) 2h0m0s outside`,
		`"maxLifetime": "-1h"`:           `"maxLifetime" -1h0m0s outside 1s..720h0m0s`,
		`"maxLifetime": "100000h"`:       `"maxLifetime" 100000h0m0s outside`,
		`"bounds": {"maxMessages": -1}`:  `"bounds.maxMessages" -1 outside`,
		`"bounds": {"maxBytes": -1}`:     `"bounds.maxBytes" and "bounds.maxMessageSize" must not be negative`,
		`"bounds": {"ttl": "9000h"}`:     `"bounds.ttl" 9000h0m0s outside`,
		`"relay": "file:///etc/passwd"`:  `the scheme is "file", not http or https`,
		`"handlers": [{"purpose": "comms:*", "exec": {"path": "bin/handler"}}]`:                 `exec.path "bin/handler" is not an absolute path`,
		`"handlers": [{"purpose": "comms:*", "exec": {"path": "/bin/true", "dir": "work"}}]`:    `exec.dir "work" is not an absolute path`,
		`"handlers": [{"purpose": "comms:*", "unix": {"socket": "app.sock"}}]`:                  `unix.socket "app.sock" is not an absolute path`,
		`"handlers": [{"purpose": "comms:*", "exec": {"path": "/bin/true", "timeout": "-1s"}}]`: `exec.timeout -1s outside 0..1h0m0s`,
	}
	for member, want := range bad {
		body := `{"version": 1, ` + base + `, ` + okHandlers + `, ` + member + `}`
		if strings.HasPrefix(member, `"handlers"`) {
			body = `{"version": 1, ` + base + `, ` + member + `}`
		}
		if strings.HasPrefix(member, `"relay"`) {
			body = `{"version": 1, ` + strings.Replace(base, `"relay": "http://r"`, member, 1) + `, ` + okHandlers + `}`
		}
		f, err := Parse([]byte(body), "test")
		if err != nil {
			t.Fatalf("Parse(%s): %v", member, err)
		}
		b, err := f.Build()
		if err == nil {
			b.Close()
			t.Errorf("Build with %s = nil error, want %q", member, want)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Build with %s = %v, want %q", member, err, want)
		}
	}
	limits := `"keyPackages": 256, "batchSize": 1000, "window": {"length": "1h", "offset": "-59m"}, "maxLifetime": "720h", "bounds": {"ttl": "720h"}`
	f, err := Parse([]byte(`{"version": 1, `+base+`, `+okHandlers+`, `+limits+`}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Build()
	if err != nil {
		t.Fatalf("Build at the limits: %v", err)
	}
	b.Close()
}

// TestDuplicateMembersRefused: a member given twice, at any depth, is an
// error naming it, not the last one silently kept.
func TestDuplicateMembersRefused(t *testing.T) {
	bad := map[string]string{
		`{"version": 1, "relay": "https://a", "relay": "https://b"}`:                       `duplicate member "relay" in the object at /`,
		`{"version": 1, "purposes": ["a:*"], "purposes": ["b:*"]}`:                         `duplicate member "purposes"`,
		`{"version": 1, "window": {"length": "5m", "length": "50m"}}`:                      `duplicate member "length" in the object at /window`,
		`{"version": 1, "handlers": [{"purpose": "a", "purpose": "b"}]}`:                   `duplicate member "purpose" in the object at /handlers/[]`,
		`{"version": 1, "mqtt": {"operators": ["did:key:a"], "operators": ["did:key:b"]}}`: `duplicate member "operators" in the object at /mqtt`,
	}
	for body, want := range bad {
		if _, err := Parse([]byte(body), "agent.json"); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "agent.json") {
			t.Errorf("Parse(%s) = %v, want %q", body, err, want)
		}
	}
}
