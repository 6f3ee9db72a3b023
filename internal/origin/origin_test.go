package origin

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	good := []string{"https://relay.example.org", "http://127.0.0.1:28417", "https://relay.example.org/", "HTTPS://Relay.example.org:8443", "http://[::1]:8080"}
	for _, s := range good {
		if err := Check("--public-url", s); err != nil {
			t.Errorf("Check(%q) = %v, want nil", s, err)
		}
	}
	bad := map[string]string{
		"relay.example.org":             "no scheme",
		"127.0.0.1:28417":               "no scheme",
		"localhost:8080":                "no scheme",
		"ftp://relay.example.org":       `the scheme is "ftp"`,
		"https://":                      "no host",
		"https://:443":                  "no host",
		"https://u:p@relay.example.org": "user name",
		"https://relay.example.org/a":   "path (/a)",
		"https://relay.example.org?x=1": "query",
		"https://relay.example.org#top": "fragment",
	}
	for s, why := range bad {
		err := Check("--public-url", s)
		if err == nil || !strings.HasPrefix(err.Error(), "--public-url must be an origin such as https://relay.example.org, not ") || !strings.Contains(err.Error(), why) {
			t.Errorf("Check(%q) = %v, want a refusal saying %q", s, err, why)
		}
	}
}
