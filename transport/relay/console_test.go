package relay

import (
	"encoding/json"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// TestConsoleServedToOperators: with operators the relay serves the fleet
// console, whose view sees a linked device as awake and, once its link
// closed, asleep; without operators there is no console.
func TestConsoleServedToOperators(t *testing.T) {
	op := didtest.Key(t, 30)
	h := newHarness(t, func(c *Config) {
		c.Ops.Console = &ConsoleConfig{Operators: []string{op.DID().String()}, Secret: make([]byte, 32)}
	})
	dev := didtest.Key(t, 1)
	c := h.device(t, dev, "hourly_wake", deviceOpts{})
	tok, err := bearer.IssuePurpose(op, h.srv.URL, bearer.PurposeFleet, t0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	devices := func() operatorapi.Fleet {
		req, _ := http.NewRequest("GET", h.srv.URL+"/fleet/api/devices", nil)
		req.Header.Set("Authorization", bearer.Authorization(tok))
		r := h.do(t, req)
		var f operatorapi.Fleet
		if err := json.Unmarshal(r.body, &f); r.status != 200 || err != nil || len(f.Devices) != 1 {
			t.Fatalf("GET /fleet/api/devices: %d %s", r.status, r.body)
		}
		return f
	}
	if d := devices().Devices[0]; d.State != operatorapi.StateAwake || d.DID != dev.DID().String() || d.Name != "dev" {
		t.Errorf("linked device: %+v, want awake", d)
	}
	gone := h.relay.Link().Gone(dev.DID().String())
	c.Close()
	select { // the relay notices the close in real time
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not notice the closed link")
	}
	if d := devices().Devices[0]; d.State != operatorapi.StateAsleep {
		t.Errorf("device after its link closed: %s, want asleep", d.State)
	}
	if r := h.get(t, "/fleet"); r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), "torporctl fleet open") {
		t.Errorf("GET /fleet without a session: %d", r.status)
	}
	if r := newHarness(t, nil).get(t, "/fleet"); r.status != http.StatusNotFound {
		t.Errorf("GET /fleet on a relay without operators: %d, want 404", r.status)
	}
}

// TestFleetMetrics: /metrics counts devices by console state and, with
// per-agent metrics, has each device's gauges labelled by DID and name.
func TestFleetMetrics(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Ops.PerAgentMetrics = true })
	dev := didtest.Key(t, 1)
	h.publishOffline(t, dev, "sleep", deviceOpts{})
	m := string(h.get(t, "/metrics").body)
	id := dev.DID().String()
	for _, want := range []string{
		`torpor_relay_fleet_devices{state="offline",tenant=""} 1`,
		`torpor_relay_fleet_devices{state="overdue",tenant=""} 0`,
		`torpor_relay_agent_asleep{agent="` + id + `",name="dev"} 0`,
		`torpor_relay_agent_overdue{agent="` + id + `",name="dev"} 0`,
		`torpor_relay_agent_held_actions{agent="` + id + `",name="dev"} 0`,
		`torpor_relay_agent_key_packages{agent="` + id + `",name="dev"} 0`,
		`torpor_relay_agent_queue_share{agent="` + id + `",name="dev"} 0`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if h := newHarness(t, nil); strings.Contains(string(h.get(t, "/metrics").body), "torpor_relay_agent_asleep") {
		t.Error("per-agent gauges without PerAgentMetrics")
	}
}
