package relay

import (
	"context"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// TestStatusHealthKeptAndMeasured: a status with health is verified and
// kept; so is one whose health has a member this relay does not know (a
// newer agent's); one whose WiFi interface carries a control character,
// or more flash free than there is, refuses the state; so does an update
// or install outcome whose text does. With per-agent
// metrics the health is a gauge per device.
func TestStatusHealthKeptAndMeasured(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Ops.PerAgentMetrics = true })
	dev := didtest.Key(t, 1)
	c := h.device(t, dev, "sleep", deviceOpts{})
	ctx := context.Background()
	temp, thr := int64(52078), uint32(0x50000)
	health := &wire.StatusHealth{UptimeS: 11520, CPUMilliC: &temp, Flash: &wire.StatusFlash{Free: 1 << 30, Total: 8 << 30},
		SupplyMV: 5020, Throttled: &thr, WiFi: &wire.StatusWiFi{Interface: "wlan0", Quality: 70, SignalDBm: -40}}
	for name, tc := range map[string]struct {
		payload any
		ok      bool
	}{
		"with health":         {wire.Status{Version: "1", Health: health}, true},
		"a future member":     {map[string]any{"version": "1", "heldCount": 0, "health": map[string]any{"uptimeS": 5, "batteryPercent": 80}}, true},
		"a control character": {wire.Status{Version: "1", Health: &wire.StatusHealth{WiFi: &wire.StatusWiFi{Interface: "wlan\u202e0"}}}, false},
		"flash above total":   {wire.Status{Version: "1", Health: &wire.StatusHealth{Flash: &wire.StatusFlash{Free: 2, Total: 1}}}, false},
		"an update's detail with a bidi override": {wire.Status{Version: "1", Update: &wire.StatusUpdate{Outcome: wire.UpdateRefused,
			Reason: "expired", Detail: "metadata \u202egnirpxe"}}, false},
		"an install reason with a newline": {wire.Status{Version: "1", Install: &wire.StatusInstall{Result: wire.InstallRolledBack,
			Version: "2", Reason: "exit 1\nlevel=INFO fake line"}}, false},
		"an update outcome in plain text": {wire.Status{Version: "1", Update: &wire.StatusUpdate{Outcome: wire.UpdateRefused,
			Reason: "expired", Detail: "the timestamp expired"}}, true},
	} {
		st := h.state(t, dev, c.Hello(), "sleep", deviceOpts{})
		st.Status = signedStatus(t, dev, wire.PurposeStatus, tc.payload)
		if _, err := c.Publish(ctx, st); (err == nil) != tc.ok {
			t.Errorf("status %s: publish error %v; want accepted %v", name, err, tc.ok)
		}
	}
	st := h.state(t, dev, c.Hello(), "sleep", deviceOpts{})
	st.Status = signedStatus(t, dev, wire.PurposeStatus, wire.Status{Version: "1", Health: health})
	if _, err := c.Publish(ctx, st); err != nil {
		t.Fatal(err)
	}
	m := string(h.get(t, "/metrics").body)
	l := `{agent="` + dev.DID().String() + `",name="dev"} `
	for _, want := range []string{
		"torpor_relay_agent_uptime_seconds" + l + "11520",
		"torpor_relay_agent_cpu_temperature_celsius" + l + "52.078",
		"torpor_relay_agent_flash_free_bytes" + l + "1.073741824e+09",
		"torpor_relay_agent_flash_size_bytes" + l + "8.589934592e+09",
		"torpor_relay_agent_supply_volts" + l + "5.02",
		"torpor_relay_agent_under_voltage" + l + "1",
		"torpor_relay_agent_wifi_signal_dbm" + l + "-40",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestNoHealthNoGauges: a device whose status has no health (an older
// agent's) has none of the health gauges.
func TestNoHealthNoGauges(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Ops.PerAgentMetrics = true })
	dev := didtest.Key(t, 1)
	c := h.device(t, dev, "sleep", deviceOpts{})
	st := h.state(t, dev, c.Hello(), "sleep", deviceOpts{})
	st.Status = signedStatus(t, dev, wire.PurposeStatus, wire.Status{Version: "0.9"})
	if _, err := c.Publish(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	m := string(h.get(t, "/metrics").body)
	if !strings.Contains(m, "torpor_relay_agent_held_actions{") || strings.Contains(m, "torpor_relay_agent_uptime_seconds{") {
		t.Errorf("/metrics of a device without health:\n%s", m)
	}
}
