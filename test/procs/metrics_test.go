package procs

import "testing"

func TestParseGauge(t *testing.T) {
	tests := []struct {
		line  string
		id    string
		v     float64
		found bool
	}{
		{`torpor_relay_agent_queue_messages{agent="did:key:z6Mk1"} 8`, "did:key:z6Mk1", 8, true},
		{`torpor_relay_agent_queue_messages{agent="did:key:z6Mk1",x="y"} 2 1700000000`, "did:key:z6Mk1", 2, true},
		{`torpor_relay_agent_queue_bytes{agent="did:key:z6Mk1"} 8`, "", 0, false},
		{`# HELP torpor_relay_agent_queue_messages Live queued records of one agent.`, "", 0, false},
		{`torpor_relay_agent_queue_messages{agent="did:key:z6Mk1"} x`, "", 0, false},
	}
	for _, tt := range tests {
		id, v, ok := parseGauge(tt.line, "torpor_relay_agent_queue_messages", "agent")
		if id != tt.id || v != tt.v || ok != tt.found {
			t.Errorf("parseGauge(%q) = %q, %v, %v; want %q, %v, %v", tt.line, id, v, ok, tt.id, tt.v, tt.found)
		}
	}
}
