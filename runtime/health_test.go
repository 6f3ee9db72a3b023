package runtime_test

import (
	"testing"

	"github.com/torpor-dev/torpor/boards"
	"github.com/torpor-dev/torpor/runtime/health"
	"github.com/torpor-dev/torpor/wake"
)

// TestStatusCarriesHealth: the board's health, read from a fake Raspberry
// Pi tree, travels in the signed status, which the relay verifies and
// keeps.
func TestStatusCarriesHealth(t *testing.T) {
	w := newWorld(t, wake.HourlyWake)
	src := health.Sources{Root: "health/testdata/pi", DataDir: t.TempDir(),
		Board: boards.Health{ThermalZone: "cpu-thermal", Throttled: "/sys/firmware-pi/get_throttled", WiFi: "wlan0"}}
	w.cfg.Status.Health = src.Read
	w.bootSuspending()
	h := w.status().Health
	if h == nil || h.UptimeS != 11523 || h.CPUMilliC == nil || *h.CPUMilliC != 52078 || h.Flash == nil || h.WiFi == nil {
		t.Fatalf("the status's health = %+v; want the fake Pi's", h)
	}
	if now, seen := h.UnderVoltage(); !now || !seen {
		t.Errorf("under-voltage now %v, seen %v; want both", now, seen)
	}
	w.shutdown()
}
