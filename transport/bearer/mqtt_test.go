package bearer

import "testing"

func TestMQTTAudience(t *testing.T) {
	for in, want := range map[string]string{
		"mqtt://127.0.0.1:1883":       "mqtt://127.0.0.1:1883",
		"tcp://127.0.0.1:1883/x?y=1":  "mqtt://127.0.0.1:1883",
		"mqtt://Broker.Example":       "mqtt://broker.example:1883",
		"tls://broker.example":        "mqtts://broker.example:8883",
		"mqtts://[::1]:9000":          "mqtts://[::1]:9000",
		" ssl://broker.example:8883 ": "mqtts://broker.example:8883",
	} {
		got, err := MQTTAudience(in)
		if err != nil || got != want {
			t.Errorf("MQTTAudience(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "127.0.0.1:1883", "http://broker.example", "mqtt://"} {
		if got, err := MQTTAudience(in); err == nil {
			t.Errorf("MQTTAudience(%q) = %q, want an error", in, got)
		}
	}
}
