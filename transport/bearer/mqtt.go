package bearer

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// MQTTAudience returns the audience of a DID Bearer token presented as the
// MQTT password to the broker at brokerURL: the URL as the client dials it,
// reduced to mqtt://host:port (plain) or mqtts://host:port (TLS). The
// schemes tcp:// and mqtt:// are the same; so are ssl://, tls:// and
// mqtts://. A missing port is the IANA default (1883, 8883), host names are
// lower-cased, and path, query and fragment are dropped. The broker
// normalises the URLs it answers to the same way, so a client and a
// broker agree whichever spelling each was configured with; a client that
// dials the broker by another name (an IP address instead of a host name)
// needs that name among the broker's audiences.
func MQTTAudience(brokerURL string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(brokerURL))
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("bearer: MQTT broker URL %q: want scheme://host[:port]", brokerURL)
	}
	scheme, port := "", u.Port()
	switch strings.ToLower(u.Scheme) {
	case "mqtt", "tcp":
		scheme = "mqtt"
		if port == "" {
			port = "1883"
		}
	case "mqtts", "ssl", "tls":
		scheme = "mqtts"
		if port == "" {
			port = "8883"
		}
	default:
		return "", fmt.Errorf("bearer: MQTT broker URL %q: unsupported scheme", brokerURL)
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port), nil
}
