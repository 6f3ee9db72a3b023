package boards_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/boards"
	"github.com/torpor-dev/torpor/boards/boardtest"
)

func TestProfilesValid(t *testing.T) {
	all := boards.All()
	want := []string{"generic-arm64", "generic-armv7", "qemu-virt", "rpi-1", "rpi-2", "rpi-3", "rpi-4", "rpi-5", "rpi-zero-2-w", "rpi-zero-w"}
	if len(all) != len(want) {
		t.Fatalf("%d profiles, want %d", len(all), len(want))
	}
	for i, b := range all {
		if b.Name != want[i] {
			t.Errorf("profile %d = %s, want %s", i, b.Name, want[i])
		}
		if err := b.Validate(); err != nil {
			t.Error(err)
		}
	}
}

func TestProfileFacts(t *testing.T) {
	tests := []struct {
		name    string
		targets string
		def     boards.Method
		rtc     string
	}{
		{"rpi-1", "armv6", boards.Timer, ""},
		{"rpi-zero-w", "armv6", boards.Timer, ""},
		{"rpi-2", "armv7", boards.Timer, ""},
		{"rpi-zero-2-w", "arm64,armv7", boards.Timer, ""},
		{"rpi-4", "arm64,armv7", boards.Timer, ""},
		{"rpi-5", "arm64", boards.RTCPowerOff, "rtc0"},
		{"generic-armv7", "armv7", boards.RTC, "rtc0"},
		{"qemu-virt", "arm64", boards.RTC, "rtc0"},
	}
	for _, tt := range tests {
		b, err := boards.ByName(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for i, tg := range b.Targets {
			if i > 0 {
				got += ","
			}
			got += tg.String()
		}
		if got != tt.targets || b.Default != tt.def || b.RTC != tt.rtc {
			t.Errorf("%s: targets %s default %s rtc %q, want %s %s %q", tt.name, got, b.Default, b.RTC, tt.targets, tt.def, tt.rtc)
		}
	}
	if _, err := boards.ByName("rpi-6"); err == nil {
		t.Error(`ByName("rpi-6") succeeded`)
	}
}

func TestDetect(t *testing.T) {
	for name, model := range boardtest.Models {
		t.Run(name, func(t *testing.T) {
			b, got, err := boards.Detect(boardtest.ModelFile(t, model))
			if err != nil {
				t.Fatal(err)
			}
			if b.Name != name || got != model {
				t.Errorf("Detect(%q) = %s, %q; want %s", model, b.Name, got, name)
			}
		})
	}
	// Other model strings the Raspberry Pi device trees use: the longest
	// prefix decides, so a Zero is not a Zero 2 W and a Compute Module 3
	// is not a Compute Module 1.
	for model, name := range map[string]string{
		"Raspberry Pi Zero Rev 1.3":                  "rpi-zero-w",
		"Raspberry Pi Model A Plus Rev 1.1":          "rpi-1",
		"Raspberry Pi Model B Rev 2":                 "rpi-1",
		"Raspberry Pi Compute Module Rev 1.0":        "rpi-1",
		"Raspberry Pi Compute Module 3 Plus Rev 1.0": "rpi-3",
		"Raspberry Pi Compute Module 4 Rev 1.0":      "rpi-4",
		"Raspberry Pi Compute Module 5 Rev 1.0":      "rpi-5",
	} {
		if b, _, err := boards.Detect(boardtest.ModelFile(t, model)); err != nil || b.Name != name {
			t.Errorf("Detect(%q) = %s, %v; want %s", model, b.Name, err, name)
		}
	}
	_, model, err := boards.Detect(boardtest.ModelFile(t, "Pine64 RockPro64 v2.1"))
	if !errors.Is(err, boards.ErrUnknownModel) || model != "Pine64 RockPro64 v2.1" {
		t.Errorf("Detect(unknown) = %q, %v; want ErrUnknownModel", model, err)
	}
	if _, _, err := boards.Detect(t.TempDir() + "/missing"); err == nil || errors.Is(err, boards.ErrUnknownModel) {
		t.Errorf("Detect(missing file) = %v, want a read error", err)
	}
	for _, arch := range []string{"arm", "arm64"} {
		if b, err := boards.Generic(arch); err != nil || b.Targets[0].GOARCH != arch {
			t.Errorf("Generic(%s) = %s, %v", arch, b.Name, err)
		}
	}
	if _, err := boards.Generic("amd64"); err == nil {
		t.Error("Generic(amd64) succeeded")
	}
}

func TestValidateRejects(t *testing.T) {
	good, _ := boards.ByName("qemu-virt")
	tests := []struct {
		name string
		edit func(*boards.Board)
	}{
		{"default not supported", func(b *boards.Board) { b.Default = boards.RTCPowerOff }},
		{"rtc without rtc", func(b *boards.Board) { b.RTC = "" }},
		{"gpio-keys without key", func(b *boards.Board) { b.WakeKey = "" }},
		{"bad target", func(b *boards.Board) { b.Targets = []boards.Target{{GOARCH: "arm", GOARM: "5"}} }},
		{"unknown method", func(b *boards.Board) { b.Methods = append(b.Methods, "telepathy") }},
		{"no data dir", func(b *boards.Board) { b.DataDir = "" }},
	}
	for _, tt := range tests {
		b := good
		b.Methods = append([]boards.Method(nil), good.Methods...)
		tt.edit(&b)
		if err := b.Validate(); err == nil {
			t.Errorf("%s: Validate succeeded", tt.name)
		}
	}
}

// TestProfileHealth: the Raspberry Pi profiles name the SoC's thermal
// zone, and those of the Pi 0-4 the firmware's throttled flags; no
// profile names a supply voltage (no board here has one the kernel
// reads); a relative health path is refused.
func TestProfileHealth(t *testing.T) {
	for _, b := range boards.All() {
		pi := strings.HasPrefix(b.Name, "rpi-")
		if pi && b.Health.ThermalZone != "cpu-thermal" {
			t.Errorf("%s: thermal zone %q, want cpu-thermal", b.Name, b.Health.ThermalZone)
		}
		if got := b.Health.Throttled != ""; got != (pi && b.Name != "rpi-5") {
			t.Errorf("%s: throttled %q", b.Name, b.Health.Throttled)
		}
		if b.Health.Supply != "" {
			t.Errorf("%s: supply %q", b.Name, b.Health.Supply)
		}
	}
	b, _ := boards.ByName("rpi-zero-w")
	if b.Health.WiFi != "wlan0" {
		t.Errorf("rpi-zero-w: WiFi %q, want wlan0", b.Health.WiFi)
	}
	b.Health.Supply = "sys/class/power_supply/BAT0/voltage_now"
	if err := b.Validate(); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("Validate with a relative supply path: %v", err)
	}
}
