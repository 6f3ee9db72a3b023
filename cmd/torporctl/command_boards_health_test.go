package main

import (
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/boards"
)

// TestPrintBoardHealth: a profile's page says what it reports as health.
func TestPrintBoardHealth(t *testing.T) {
	b, err := boards.ByName("rpi-zero-w")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := printBoard(&out, b); err != nil {
		t.Fatal(err)
	}
	want := "health:     uptime; free flash; CPU temperature (cpu-thermal); under-voltage (/sys/devices/platform/soc/soc:firmware/get_throttled); WiFi (wlan0)"
	if !strings.Contains(out.String(), want) {
		t.Errorf("printBoard lacks %q:\n%s", want, out.String())
	}
	if got := healthSources(boards.Health{Supply: "/sys/class/power_supply/BAT0/voltage_now"}); !strings.Contains(got, "supply voltage (/sys/class/power_supply/BAT0/voltage_now)") || !strings.Contains(got, "the first interface") {
		t.Errorf("healthSources with a supply = %q", got)
	}
}
