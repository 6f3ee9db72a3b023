package console

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/wake"
)

// piHealth is a Raspberry Pi's health: 52.078 °C, 1.2 GB free of 7.3 GB,
// up 3 h 12 min, 5.02 V, under-voltage seen (not now), WiFi.
func piHealth() *wire.StatusHealth {
	temp, thr := int64(52078), uint32(0x50000)
	return &wire.StatusHealth{UptimeS: 3*3600 + 12*60 + 7, CPUMilliC: &temp, Flash: &wire.StatusFlash{Free: 1_234_000_000, Total: 7_300_000_000},
		SupplyMV: 5020, Throttled: &thr, WiFi: &wire.StatusWiFi{Interface: "wlan0", Quality: 70, SignalDBm: -40}}
}

// TestHealthView: the health of the signed status is the device's in the
// view and the JSON API, and absent for a device whose status has none
// (as an older agent's).
func TestHealthView(t *testing.T) {
	s := newSite(t, "")
	pi, old := didtest.Key(t, 2), didtest.Key(t, 3)
	s.put(t, device{key: pi, name: "pi", mode: wake.Sleep, status: &wire.Status{Version: "1", Health: piHealth()}})
	s.put(t, device{key: old, name: "old", mode: wake.Sleep, status: &wire.Status{Version: "0.9"}})
	d, err := s.src.One(context.Background(), pi.DID().String(), t0)
	if err != nil || d.Health == nil || *d.Health.CPUMilliC != 52078 || d.Health.Flash.Free != 1_234_000_000 || d.StatusError != "" {
		t.Fatalf("One = %+v, %v; want the status's health", d.Health, err)
	}
	if d, err := s.src.One(context.Background(), old.DID().String(), t0); err != nil || d.Health != nil || d.StatusError != "" {
		t.Errorf("a status without health: %+v, %v", d.Health, err)
	}
	tok, _ := bearer.IssuePurpose(s.op, s.origin, bearer.PurposeFleet, t0, time.Minute)
	a := s.do(t, "GET", "/fleet/api/devices/"+pi.DID().String(), map[string]string{"Authorization": "Bearer " + tok}, nil)
	var got operatorapi.Device
	if err := json.Unmarshal([]byte(a.body), &got); err != nil || got.Health == nil || got.Health.SupplyMV != 5020 || got.Health.WiFi.SignalDBm != -40 {
		t.Errorf("API device: %d %s", a.status, a.body)
	}
	if !strings.Contains(a.body, `"health":{"uptimeS":11527,"cpuMilliC":52078,"flash":{"free":1234000000,"total":7300000000}`) {
		t.Errorf("API device's health member:\n%s", a.body)
	}
}

// TestHealthOnDevicePage: the device page shows the health in people's
// units; a device without health has no health section.
func TestHealthOnDevicePage(t *testing.T) {
	s := newSite(t, "")
	pi := didtest.Key(t, 2)
	s.put(t, device{key: pi, name: "pi", mode: wake.Sleep, status: &wire.Status{Version: "1", Health: piHealth()}})
	c := s.login(t)
	a := s.do(t, "GET", "/fleet/device/"+pi.DID().String(), nil, c)
	for _, want := range []string{"up 3 h 12 min", "52.1 °C", "1.2 GB free of 7.3 GB", "5.02 V", `<span class="warn">under-voltage seen</span>`, "wlan0 link quality 70, signal -40 dBm"} {
		if !strings.Contains(a.body, want) {
			t.Errorf("the device page lacks %q:\n%s", want, a.body)
		}
	}
	if a := s.do(t, "GET", "/fleet/device/"+s.dev.DID().String(), nil, c); a.status != 200 || strings.Contains(a.body, `id="health"`) {
		t.Errorf("a device without health: %d, health section shown", a.status)
	}
}

// TestHealthItems: each reading alone, and the units' edges.
func TestHealthItems(t *testing.T) {
	cold, now := int64(-4500), uint32(1)
	for _, tc := range []struct {
		h    wire.StatusHealth
		want string
	}{
		{wire.StatusHealth{UptimeS: 42}, "uptime=up 42 s"},
		{wire.StatusHealth{UptimeS: 2*86400 + 5*3600}, "uptime=up 2 d 5 h"},
		{wire.StatusHealth{CPUMilliC: &cold}, "CPU=-4.5 °C"},
		{wire.StatusHealth{Flash: &wire.StatusFlash{Free: 10_000_000, Total: 8_000_000_000}}, "flash=10.0 MB free of 8.0 GB!"},
		{wire.StatusHealth{Throttled: &now}, "power=under-voltage now!"},
		{wire.StatusHealth{Throttled: new(uint32)}, "power=no under-voltage since boot"},
		{wire.StatusHealth{WiFi: &wire.StatusWiFi{Interface: "wlan1", Quality: 5}}, "WiFi=wlan1 link quality 5"},
	} {
		var got []string
		for _, it := range healthItems(&tc.h) {
			s := it.Name + "=" + it.Value
			if it.Warn {
				s += "!"
			}
			got = append(got, s)
		}
		if strings.Join(got, "; ") != tc.want {
			t.Errorf("healthItems(%+v) = %q; want %q", tc.h, got, tc.want)
		}
	}
}
