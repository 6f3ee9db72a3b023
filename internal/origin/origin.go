// Package origin checks the URLs Torpor's binaries take at start: a
// relay's public origin, which every DID Bearer token names as its
// audience, and the relay URL a device dials. A value that is not an
// origin (no scheme, a path, a query) is refused with a message that shows
// the right form, rather than failing later as an audience mismatch or a
// dial that never succeeds.
package origin

import (
	"fmt"
	"net/url"
	"strings"
)

// Example is the form shown in the messages.
const Example = "https://relay.example.org"

// Check reports whether s is an http or https origin: a scheme, a host (and
// a port), and no user, path (other than "/"), query or fragment. name is
// the setting's name, as the user wrote it (--public-url, "relay").
func Check(name, s string) error {
	if why := problem(s); why != "" {
		return fmt.Errorf("%s must be an origin such as %s, not %q: %s", name, Example, s, why)
	}
	return nil
}

func problem(s string) string {
	scheme, _, ok := strings.Cut(s, "://")
	if !ok {
		return "it has no scheme (http:// or https://)"
	}
	if l := strings.ToLower(scheme); l != "http" && l != "https" {
		return fmt.Sprintf("the scheme is %q, not http or https", scheme)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return err.Error()
	case u.Host == "" || u.Hostname() == "":
		return "it has no host"
	case u.User != nil:
		return "it has a user name"
	case u.Path != "" && u.Path != "/":
		return fmt.Sprintf("it has a path (%s)", u.Path)
	case u.RawQuery != "" || u.ForceQuery:
		return "it has a query"
	case u.Fragment != "" || strings.Contains(s, "#"):
		return "it has a fragment"
	}
	return ""
}
