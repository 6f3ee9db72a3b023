package mqttconn

import (
	"fmt"
	"net/url"
	"strings"
)

// ParseBroker reads a broker address: a URL with the scheme mqtt or tcp
// (plain), or mqtts, tls or ssl (TLS), or a bare HOST:PORT, which is
// plain MQTT (mqtt://HOST:PORT). The error names the expected forms.
func ParseBroker(s string) (*url.URL, error) {
	s = strings.TrimSpace(s)
	in := s
	if !strings.Contains(s, "://") {
		s = "mqtt://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("mqtt: broker %q: want mqtt://HOST:PORT, mqtts://HOST:PORT or HOST:PORT", in)
	}
	switch strings.ToLower(u.Scheme) {
	case "mqtt", "tcp", "mqtts", "tls", "ssl":
		return u, nil
	}
	return nil, fmt.Errorf("mqtt: broker %q: unsupported scheme %q: want mqtt://HOST:PORT, mqtts://HOST:PORT or HOST:PORT", in, u.Scheme)
}
