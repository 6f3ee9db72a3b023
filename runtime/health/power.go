package health

import (
	"path"
	"strconv"
	"strings"

	"github.com/torpor-dev/torpor/transport/link/wire"
)

// hwmonIn reports whether base names a hwmon voltage input (in0_input,
// in1_input ...), whose unit is the millivolt
// (https://docs.kernel.org/hwmon/sysfs-interface.html).
func hwmonIn(base string) bool {
	n, in := strings.CutPrefix(base, "in")
	n, input := strings.CutSuffix(n, "_input")
	if !in || !input || n == "" {
		return false
	}
	_, err := strconv.ParseUint(n, 10, 8)
	return err == nil
}

// SupplyFile reports whether SupplyMV knows the unit of the file name.
func SupplyFile(name string) bool {
	base := path.Base(name)
	return base == "voltage_now" || base == "voltage_avg" || hwmonIn(base)
}

// SupplyMV returns the voltage the sysfs file name reads, in millivolts:
// a power supply's voltage_now or voltage_avg reads microvolts
// (https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-class-power),
// a hwmon in*_input millivolts. Any other file, or a value outside 0-60 V,
// is absent.
func SupplyMV(root, name string) (int64, bool) {
	v, ok := readInt(root, name)
	if !ok {
		return 0, false
	}
	if !SupplyFile(name) {
		return 0, false
	}
	if !hwmonIn(path.Base(name)) {
		v /= 1000 // microvolts
	}
	if v <= 0 || v > 60000 {
		return 0, false
	}
	return v, true
}

// Throttled returns the Raspberry Pi firmware's throttled flags from its
// get_throttled file, which prints them in hexadecimal (the bits of
// wire.StatusHealth.Throttled).
func Throttled(root, name string) (uint32, bool) {
	s, ok := readFile(root, name)
	if !ok {
		return 0, false
	}
	s = strings.TrimPrefix(strings.TrimSpace(s), "0x")
	t, err := strconv.ParseUint(s, 16, 32)
	return uint32(t), err == nil
}

// WiFi returns the link of the wireless interface iface (the first listed
// when empty) from /proc/net/wireless: the link quality and, when the
// driver reports it in dBm, the signal level. The kernel prints a level
// in dBm as a negative number (net/wireless/wext-proc.c,
// https://github.com/torvalds/linux/blob/master/net/wireless/wext-proc.c).
func WiFi(root, iface string) (wire.StatusWiFi, bool) {
	s, ok := readFile(root, "proc/net/wireless")
	if !ok {
		return wire.StatusWiFi{}, false
	}
	lines := strings.Split(s, "\n")
	for _, l := range lines[min(2, len(lines)):] { // two lines of headings
		name, rest, ok := strings.Cut(l, ":")
		name = strings.TrimSpace(name)
		f := strings.Fields(rest)
		if !ok || len(f) < 3 || name == "" || len(name) > wire.MaxInterface || (iface != "" && name != iface) {
			continue
		}
		q, err := strconv.Atoi(strings.TrimSuffix(f[1], "."))
		if err != nil || q < 0 || q > 255 {
			return wire.StatusWiFi{}, false
		}
		w := wire.StatusWiFi{Interface: name, Quality: q}
		if lvl, err := strconv.Atoi(strings.TrimSuffix(f[2], ".")); err == nil && lvl < 0 && lvl >= -127 {
			w.SignalDBm = lvl
		}
		return w, true
	}
	return wire.StatusWiFi{}, false
}
