// Package boards describes the boards torpor-agent runs on: what to build
// for them (GOARCH, GOARM), how they can be woken and which way is the
// default, where their RTC and wake GPIO are, where the agent keeps its
// data, and what their power hardware allows. torpor-agent takes --board
// or detects the board from /proc/device-tree/model; `torporctl boards`
// lists the profiles.
//
// # Power on Raspberry Pi boards
//
// A Raspberry Pi 0–4 has no real-time clock and supports suspend-to-idle
// at most, so "sleeping" there takes one of:
//
//   - an RTC HAT (DS3231, DS1307, PCF85063 ...) through the kernel's
//     rtc-ds1307 driver (dtoverlay=i2c-rtc,ds3231): it appears as rtc0 and
//     the rtc wake method works as on any board with an RTC;
//   - a gpio-keys wakeup source (a device-tree overlay with
//     wakeup-source) that ends a suspend-to-idle on a button or sensor;
//   - halt plus an external power controller: the agent powers off, and
//     the controller cuts and restores power, or pulls GPIO3 low, which
//     boots a halted Pi 1–4.
//
// A Raspberry Pi 5 has its own RTC (rpi-rtc, with a battery connector) and
// wakes from halt on its alarm when the bootloader has POWER_OFF_ON_HALT=1:
// its default is the RTC alarm and power off.
//
// These are board facts, not measurements made here: the wake paths were
// measured on QEMU's virt board (the qemu-virt profile) with Debian's arm64
// kernel; docs/boards.md says what holds on real hardware.
package boards

import (
	"fmt"
	"sort"
	"strings"
)

// Method is a way of waking the board.
type Method string

const (
	// Timer waits on the clock in process; the board stays up. Works on
	// every board.
	Timer Method = "timer"
	// GPIO waits in process for an edge on the wake line.
	GPIO Method = "gpio"
	// RTC arms the RTC wake alarm and suspends (freeze).
	RTC Method = "rtc"
	// RTCPowerOff arms the RTC wake alarm and powers off; only boards that
	// wake from halt on the alarm.
	RTCPowerOff Method = "rtc-poweroff"
	// GPIOKeys suspends until a gpio-keys wakeup source (declared by the
	// board's device tree) fires.
	GPIOKeys Method = "gpio-keys"
	// PowerOffGPIO powers off; an external power controller or a button on
	// the board's wake-from-halt pin boots it again.
	PowerOffGPIO Method = "poweroff-gpio"
)

// Methods lists every method, in the order of the table in docs/boards.md.
var Methods = []Method{Timer, GPIO, RTC, RTCPowerOff, GPIOKeys, PowerOffGPIO}

// ParseMethod returns the method named s.
func ParseMethod(s string) (Method, error) {
	for _, m := range Methods {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("boards: unknown wake method %q", s)
}

// Target is one build target: GOOS is always linux.
type Target struct {
	GOARCH string `json:"goarch"`
	GOARM  string `json:"goarm,omitempty"`
}

// String returns "arm64", "armv6" or "armv7".
func (t Target) String() string {
	if t.GOARCH == "arm" {
		return "armv" + t.GOARM
	}
	return t.GOARCH
}

// Board is a board profile.
type Board struct {
	// Name is the profile's name, as --board takes it.
	Name string `json:"name"`
	// Title is the board's marketing name.
	Title string `json:"title"`
	// Models are prefixes of /proc/device-tree/model that identify the
	// board; empty for generic profiles.
	Models []string `json:"models,omitempty"`
	// Targets are the userlands the board runs, preferred first: a Pi 4
	// runs arm64 and 32-bit armv7 operating systems.
	Targets []Target `json:"targets"`
	// Methods are the wake methods the board supports; Default is the
	// one the agent uses unless configured otherwise.
	Methods []Method `json:"methods"`
	Default Method   `json:"default"`
	// Sleep is the state the suspending methods enter ("freeze").
	Sleep string `json:"sleep"`
	// RTC is the RTC device name when the board has one ("rtc0"), empty
	// when it needs an add-on.
	RTC string `json:"rtc,omitempty"`
	// GPIOChip and WakeLine name the GPIO line the gpio method watches
	// (a gpioreg name such as "GPIO17", or "WAKE_BTN"); WakeLineNumber is
	// its offset on the chip, for chips whose lines have no names.
	GPIOChip       string `json:"gpio_chip"`
	WakeLine       string `json:"wake_line"`
	WakeLineNumber int    `json:"wake_line_number"`
	// WakeKey is the label of the gpio-keys button the gpio-keys method
	// expects to end a suspend (the kernel's IRQ handler name).
	WakeKey string `json:"wake_key,omitempty"`
	// DataDir is where the agent keeps its bbolt files and keys.
	DataDir string `json:"data_dir"`
	// Power says what the board's power hardware allows.
	Power string `json:"power"`
	// Health names what the board can measure of itself for the signed
	// status (runtime/health); uptime and free flash need no naming.
	Health Health `json:"health"`
}

// Health names the board's sources of health readings. Paths are
// absolute paths of the running system; an empty member means the
// board has no such source, or the reader's default.
type Health struct {
	// ThermalZone is the type of the CPU's thermal zone
	// (/sys/class/thermal/thermal_zone*/type, see
	// https://docs.kernel.org/driver-api/thermal/sysfs-api.html); empty:
	// the first zone of type cpu-thermal or x86_pkg_temp.
	ThermalZone string `json:"thermal_zone,omitempty"`
	// Supply is the sysfs file that reads the supply or battery voltage:
	// a power supply's voltage_now in microvolts
	// (https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-class-power)
	// or a hwmon in*_input in millivolts
	// (https://docs.kernel.org/hwmon/sysfs-interface.html).
	Supply string `json:"supply,omitempty"`
	// Throttled is the Raspberry Pi firmware's get_throttled file: its
	// flags say whether the supply fell below the firmware's threshold
	// (https://www.raspberrypi.com/documentation/computers/os.html#get_throttled).
	Throttled string `json:"throttled,omitempty"`
	// WiFi is the wireless interface whose link /proc/net/wireless
	// reports; empty: the first it lists.
	WiFi string `json:"wifi,omitempty"`
}

// Supports reports whether m is one of the board's methods.
func (b Board) Supports(m Method) bool {
	for _, x := range b.Methods {
		if x == m {
			return true
		}
	}
	return false
}

// Validate checks that the profile is complete and consistent.
func (b Board) Validate() error {
	switch {
	case b.Name == "" || b.Title == "":
		return fmt.Errorf("boards: profile %q: name and title are required", b.Name)
	case len(b.Targets) == 0:
		return fmt.Errorf("boards: profile %q: no targets", b.Name)
	case !b.Supports(b.Default):
		return fmt.Errorf("boards: profile %q: default method %q not among %v", b.Name, b.Default, b.Methods)
	case (b.Supports(RTC) || b.Supports(RTCPowerOff)) && b.RTC == "" && !strings.Contains(b.Power, "RTC HAT"):
		return fmt.Errorf("boards: profile %q: rtc methods without an RTC or an RTC HAT note", b.Name)
	case b.Supports(GPIOKeys) && b.WakeKey == "":
		return fmt.Errorf("boards: profile %q: gpio-keys without a wake key label", b.Name)
	case b.DataDir == "" || b.Sleep == "":
		return fmt.Errorf("boards: profile %q: data dir and sleep state are required", b.Name)
	case !absOrEmpty(b.Health.Supply) || !absOrEmpty(b.Health.Throttled):
		return fmt.Errorf("boards: profile %q: health paths must be absolute", b.Name)
	}
	for _, t := range b.Targets {
		if t.GOARCH != "arm64" && !(t.GOARCH == "arm" && (t.GOARM == "6" || t.GOARM == "7")) {
			return fmt.Errorf("boards: profile %q: unsupported target %+v", b.Name, t)
		}
	}
	for _, m := range b.Methods {
		if _, err := ParseMethod(string(m)); err != nil {
			return fmt.Errorf("boards: profile %q: %w", b.Name, err)
		}
	}
	return nil
}

func absOrEmpty(p string) bool { return p == "" || strings.HasPrefix(p, "/") }

// All returns every profile, sorted by name.
func All() []Board {
	out := append([]Board(nil), profiles...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ByName returns the profile called name.
func ByName(name string) (Board, error) {
	for _, b := range profiles {
		if b.Name == name {
			return b, nil
		}
	}
	names := make([]string, 0, len(profiles))
	for _, b := range All() {
		names = append(names, b.Name)
	}
	return Board{}, fmt.Errorf("boards: unknown board %q (known: %s)", name, strings.Join(names, ", "))
}
