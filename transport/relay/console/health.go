package console

import (
	"fmt"

	"github.com/torpor-dev/torpor/transport/link/wire"
)

// healthItem is one line of the device page's health section.
type healthItem struct {
	Name, Value string
	Warn        bool
}

// healthItems is h as the device page shows it, in people's units.
func healthItems(h *wire.StatusHealth) []healthItem {
	if h == nil {
		return nil
	}
	var out []healthItem
	add := func(name, value string, warn bool) { out = append(out, healthItem{name, value, warn}) }
	if h.UptimeS > 0 {
		add("uptime", "up "+uptime(h.UptimeS), false)
	}
	if h.CPUMilliC != nil {
		add("CPU", fmt.Sprintf("%.1f °C", float64(*h.CPUMilliC)/1000), false)
	}
	if f := h.Flash; f != nil {
		add("flash", decimalBytes(f.Free)+" free of "+decimalBytes(f.Total), f.Total > 0 && f.Free < f.Total/20)
	}
	if h.SupplyMV > 0 {
		add("supply", fmt.Sprintf("%.2f V", float64(h.SupplyMV)/1000), false)
	}
	if h.Throttled != nil {
		switch now, seen := h.UnderVoltage(); {
		case now:
			add("power", "under-voltage now", true)
		case seen:
			add("power", "under-voltage seen", true)
		default:
			add("power", "no under-voltage since boot", false)
		}
	}
	if w := h.WiFi; w != nil {
		v := fmt.Sprintf("%s link quality %d", w.Interface, w.Quality)
		if w.SignalDBm != 0 {
			v += fmt.Sprintf(", signal %d dBm", w.SignalDBm)
		}
		add("WiFi", v, false)
	}
	return out
}

// uptime is s seconds as "3 h 12 min".
func uptime(s int64) string {
	d, h, m := s/86400, s%86400/3600, s%3600/60
	switch {
	case d > 0:
		return fmt.Sprintf("%d d %d h", d, h)
	case h > 0:
		return fmt.Sprintf("%d h %d min", h, m)
	case m > 0:
		return fmt.Sprintf("%d min", m)
	}
	return fmt.Sprintf("%d s", s)
}

// decimalBytes is n in decimal units, as flash is sold ("7.3 GB").
func decimalBytes(n uint64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
