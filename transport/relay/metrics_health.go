package relay

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/torpor-dev/torpor/transport/link/wire"
)

// healthGauges are the per-agent gauges of the board's health, from the
// device's signed status (link wire.StatusHealth): what it measured at the
// wake that published it, absent when it measured nothing. Like the
// fleet's gauges (metrics_fleet.go) they need Config.Ops.PerAgentMetrics.
//
//	torpor_relay_agent_uptime_seconds{agent,name}         seconds since its boot
//	torpor_relay_agent_cpu_temperature_celsius{agent,name} its CPU's temperature
//	torpor_relay_agent_flash_free_bytes{agent,name}       free space of its data directory's file system
//	torpor_relay_agent_flash_size_bytes{agent,name}       that file system's size
//	torpor_relay_agent_supply_volts{agent,name}           its supply or battery voltage
//	torpor_relay_agent_under_voltage{agent,name}          1 when the firmware saw under-voltage since boot, else 0
//	torpor_relay_agent_wifi_signal_dbm{agent,name}        its WiFi signal level
var healthGauges = []*prometheus.Desc{
	prometheus.NewDesc("torpor_relay_agent_uptime_seconds", "Seconds since the device booted, at its last status.", agentLabels, nil),
	prometheus.NewDesc("torpor_relay_agent_cpu_temperature_celsius", "The device's CPU temperature at its last status.", agentLabels, nil),
	prometheus.NewDesc("torpor_relay_agent_flash_free_bytes", "Free bytes of the file system of the device's data directory, at its last status.", agentLabels, nil),
	prometheus.NewDesc("torpor_relay_agent_flash_size_bytes", "Size in bytes of the file system of the device's data directory.", agentLabels, nil),
	prometheus.NewDesc("torpor_relay_agent_supply_volts", "The device's supply or battery voltage at its last status.", agentLabels, nil),
	prometheus.NewDesc("torpor_relay_agent_under_voltage", "1 when the device's firmware saw its supply under-voltage since boot, else 0 (Raspberry Pi).", agentLabels, nil),
	prometheus.NewDesc("torpor_relay_agent_wifi_signal_dbm", "The device's WiFi signal level at its last status.", agentLabels, nil),
}

// healthMetrics sends the health gauges of agent (its name label name)
// for what h holds.
func healthMetrics(ch chan<- prometheus.Metric, agent, name string, h *wire.StatusHealth) {
	if h == nil {
		return
	}
	g := func(i int, v float64) {
		ch <- prometheus.MustNewConstMetric(healthGauges[i], prometheus.GaugeValue, v, agent, name)
	}
	if h.UptimeS > 0 {
		g(0, float64(h.UptimeS))
	}
	if h.CPUMilliC != nil {
		g(1, float64(*h.CPUMilliC)/1000)
	}
	if h.Flash != nil {
		g(2, float64(h.Flash.Free))
		g(3, float64(h.Flash.Total))
	}
	if h.SupplyMV > 0 {
		g(4, float64(h.SupplyMV)/1000)
	}
	if h.Throttled != nil {
		_, seen := h.UnderVoltage()
		g(5, flag(seen))
	}
	if h.WiFi != nil && h.WiFi.SignalDBm != 0 {
		g(6, float64(h.WiFi.SignalDBm))
	}
}
