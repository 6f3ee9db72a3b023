package health

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/boards"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// piBoard names testdata's sources as a Pi profile names the device's
// (the throttled file under another path: a module's files may not hold
// the colon of soc:firmware).
var piBoard = boards.Health{ThermalZone: "cpu-thermal", Throttled: "/sys/firmware-pi/get_throttled", WiFi: "wlan0",
	Supply: "/sys/class/power_supply/BAT0/voltage_now"}

// TestReadPresent reads every source of a fake Raspberry Pi tree.
func TestReadPresent(t *testing.T) {
	dir := t.TempDir()
	h := Sources{Root: "testdata/pi", DataDir: dir, Board: piBoard}.Read()
	if h == nil || h.Flash == nil || h.Flash.Total == 0 || h.Flash.Free > h.Flash.Total {
		t.Fatalf("Read = %+v; want the data directory's flash", h)
	}
	temp, thr := int64(52078), uint32(0x50005)
	want := &wire.StatusHealth{UptimeS: 11523, CPUMilliC: &temp, Flash: h.Flash, SupplyMV: 5020, Throttled: &thr,
		WiFi: &wire.StatusWiFi{Interface: "wlan0", Quality: 70, SignalDBm: -40}}
	if d := cmp.Diff(want, h); d != "" {
		t.Errorf("Read (-want +got):\n%s", d)
	}
}

// TestReadAbsent: a tree with none of the files, and no data directory,
// measures nothing, and Read says so with nil.
func TestReadAbsent(t *testing.T) {
	if h := (Sources{Root: t.TempDir(), Board: piBoard}).Read(); h != nil {
		t.Errorf("Read of an empty tree = %+v; want nil", h)
	}
	if h := (Sources{Root: "testdata/pi", DataDir: "testdata/no-such-dir"}).Read(); h == nil || h.Flash != nil {
		t.Errorf("Read with a missing data directory = %+v; want no flash", h)
	}
}

// TestReadGarbage: files that do not parse, or read values out of range,
// are absent; they do not fail the reading of the others.
func TestReadGarbage(t *testing.T) {
	h := Sources{Root: "testdata/garbage", Board: piBoard}.Read()
	if h != nil {
		t.Errorf("Read of a garbage tree = %+v; want nil", h)
	}
	if v, ok := SupplyMV("testdata/garbage", "/sys/class/hwmon/hwmon0/in1_input"); ok {
		t.Errorf("SupplyMV of 99999999 mV = %d; want absent", v)
	}
}

// TestDefaults: without a zone or interface named, the first zone of a
// CPU type and the first wireless interface listed are read; a zone or
// interface named but absent is absent.
func TestDefaults(t *testing.T) {
	if v, ok := CPUMilliC("testdata/pi", ""); !ok || v != 52078 {
		t.Errorf("CPUMilliC with no zone named = %d, %v; want cpu-thermal's 52078", v, ok)
	}
	if v, ok := CPUMilliC("testdata/pi", "soc-thermal"); ok {
		t.Errorf("CPUMilliC of a zone that is not there = %d", v)
	}
	if w, ok := WiFi("testdata/pi", ""); !ok || w != (wire.StatusWiFi{Interface: "eth1", Quality: 31, SignalDBm: -79}) {
		t.Errorf("WiFi with no interface named = %+v, %v; want eth1's", w, ok)
	}
	if w, ok := WiFi("testdata/pi", "wlan1"); ok {
		t.Errorf("WiFi of an interface not listed = %+v", w)
	}
}

// TestSupplyUnits: a hwmon input reads millivolts, a power supply's
// voltage_now microvolts; a file of another kind has no known unit.
func TestSupplyUnits(t *testing.T) {
	for name, want := range map[string]int64{
		"/sys/class/hwmon/hwmon0/in1_input":        3712,
		"/sys/class/power_supply/BAT0/voltage_now": 5020,
		"/sys/class/hwmon/hwmon0/curr1_input":      0,
		"":                                         0,
	} {
		if got, ok := SupplyMV("testdata/pi", name); got != want || ok != (want != 0) {
			t.Errorf("SupplyMV(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
}
