// Package health reads what a board can measure of itself for the
// device's signed status (link wire.StatusHealth): uptime, the CPU's
// temperature, the data directory's free flash, the supply voltage, the
// Raspberry Pi firmware's throttled flags and the WiFi link.
//
// Every reader takes the root of the file system it reads (a fake sysfs
// and procfs tree in tests), reads a bounded number of small files, and
// never fails: a reading that is unavailable or does not parse is absent.
package health

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/torpor-dev/torpor/boards"
	"github.com/torpor-dev/torpor/internal/diskspace"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// Sources says where to read.
type Sources struct {
	// Root is the root of the file system the readers read ("/" on a
	// device).
	Root string
	// DataDir is the agent's data directory, whose file system's space
	// the status reports (read with statfs(2), not under Root).
	DataDir string
	// Board names the thermal zone, supply, throttled flags and WiFi
	// interface (boards.Board.Health).
	Board boards.Health
}

// Read returns what the sources measure, nil when nothing.
func (s Sources) Read() *wire.StatusHealth {
	var h wire.StatusHealth
	h.UptimeS, _ = Uptime(s.Root)
	if t, ok := CPUMilliC(s.Root, s.Board.ThermalZone); ok {
		h.CPUMilliC = &t
	}
	if free, total, ok := diskspace.Of(s.DataDir); ok {
		h.Flash = &wire.StatusFlash{Free: free, Total: total}
	}
	h.SupplyMV, _ = SupplyMV(s.Root, s.Board.Supply)
	if t, ok := Throttled(s.Root, s.Board.Throttled); ok {
		h.Throttled = &t
	}
	if w, ok := WiFi(s.Root, s.Board.WiFi); ok {
		h.WiFi = &w
	}
	if h == (wire.StatusHealth{}) {
		return nil
	}
	return &h
}

// maxFile bounds what a reader reads of one file: the files read hold a
// number or, /proc/net/wireless, a line per wireless interface.
const maxFile = 4 << 10

// readFile reads at most maxFile bytes of root/name.
func readFile(root, name string) (string, bool) {
	if name == "" {
		return "", false
	}
	f, err := os.Open(filepath.Join(root, name))
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile))
	return string(b), err == nil
}

// readInt reads root/name as one decimal integer.
func readInt(root, name string) (int64, bool) {
	s, ok := readFile(root, name)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n, err == nil
}

// Uptime returns the seconds since boot, the first field of /proc/uptime
// (https://man7.org/linux/man-pages/man5/proc_uptime.5.html).
func Uptime(root string) (int64, bool) {
	s, ok := readFile(root, "proc/uptime")
	f := strings.Fields(s)
	if !ok || len(f) == 0 {
		return 0, false
	}
	up, err := strconv.ParseFloat(f[0], 64)
	if err != nil || up < 1 || up > 1<<40 {
		return 0, false
	}
	return int64(up), true
}

// maxZones bounds the thermal zones CPUMilliC looks at.
const maxZones = 32

// defaultZones are the zone types CPUMilliC takes when the board names
// none: the Arm SoCs' (Raspberry Pi and other device trees) and Intel's
// package sensor.
var defaultZones = []string{"cpu-thermal", "x86_pkg_temp"}

// CPUMilliC returns the temperature of the first thermal zone of type
// zone (or, when zone is empty, of a type in defaultZones) in
// millidegrees Celsius
// (https://docs.kernel.org/driver-api/thermal/sysfs-api.html).
func CPUMilliC(root, zone string) (int64, bool) {
	const dir = "sys/class/thermal"
	ents, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		return 0, false
	}
	n := 0
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "thermal_zone") || n >= maxZones {
			continue
		}
		n++
		typ, _ := readFile(root, filepath.Join(dir, e.Name(), "type"))
		typ = strings.TrimSpace(typ)
		if typ == "" || (zone != "" && typ != zone) || (zone == "" && !contains(defaultZones, typ)) {
			continue
		}
		t, ok := readInt(root, filepath.Join(dir, e.Name(), "temp"))
		if ok && t > -273150 && t < 1000000 {
			return t, true
		}
		return 0, false
	}
	return 0, false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
