package conffile

import (
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/boards"
	"github.com/torpor-dev/torpor/runtime"
)

// TestBuildHealth: an agent without a board profile still reads its
// health (uptime, a CPU zone, flash), so the status carries what any
// Linux machine can tell.
func TestBuildHealth(t *testing.T) {
	c := &runtime.Config{}
	c.Store.DataDir = t.TempDir()
	if err := (&File{}).buildWake(c); err != nil || c.Status.Health == nil {
		t.Fatalf("buildWake with no board: Health set %v, %v; want a reader", c.Status.Health != nil, err)
	}
}

// TestHealthMember: the file's "health" names sources instead of the
// profile's, and a supply that is not an absolute path to a file of a
// known unit is refused.
func TestHealthMember(t *testing.T) {
	f, err := Parse([]byte(`{"version":1,"health":{"supply":"/sys/class/power_supply/BAT0/voltage_now","wifi":"wlan1"}}`), "agent.json")
	if err != nil {
		t.Fatal(err)
	}
	got := f.healthSources("/var/lib/torpor", boards.Health{ThermalZone: "cpu-thermal", WiFi: "wlan0"})
	want := boards.Health{ThermalZone: "cpu-thermal", WiFi: "wlan1", Supply: "/sys/class/power_supply/BAT0/voltage_now"}
	if got.Board != want || got.Root != "/" || got.DataDir != "/var/lib/torpor" {
		t.Errorf("healthSources = %+v; want %+v", got, want)
	}
	for _, supply := range []string{"sys/class/power_supply/BAT0/voltage_now", "/sys/class/power_supply/BAT0/capacity"} {
		f := &File{Health: &Health{Supply: supply}}
		if err := f.buildWake(&runtime.Config{}); err == nil || !strings.Contains(err.Error(), "health: supply") {
			t.Errorf("supply %q: %v; want refused", supply, err)
		}
	}
}
