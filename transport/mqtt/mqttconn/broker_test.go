package mqttconn

import (
	"strings"
	"testing"
)

// TestParseBroker: a bare HOST:PORT is plain MQTT; a URL keeps its
// scheme; anything else is refused with the expected forms named.
func TestParseBroker(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:21883":         "mqtt://127.0.0.1:21883",
		"broker.example.org:1883": "mqtt://broker.example.org:1883",
		" mqtts://b.example:8883": "mqtts://b.example:8883",
		"tcp://[::1]:1883":        "tcp://[::1]:1883",
		"mqtt://localhost":        "mqtt://localhost",
	} {
		u, err := ParseBroker(in)
		if err != nil || u.String() != want {
			t.Errorf("ParseBroker(%q) = %v, %v; want %s", in, u, err, want)
		}
	}
	for _, in := range []string{"", "http://b.example:80", "mqtt://", "mqtt://:1883", "a b:1"} {
		u, err := ParseBroker(in)
		if err == nil || !strings.Contains(err.Error(), "want mqtt://HOST:PORT, mqtts://HOST:PORT or HOST:PORT") {
			t.Errorf("ParseBroker(%q) = %v, %v; want an error naming the forms", in, u, err)
		}
	}
}
