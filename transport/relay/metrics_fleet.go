package relay

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/transport/relay/console"
)

// fleetCollector reads the fleet view (package console) at scrape time:
// always the number of devices in each state and tenant, and with
// Config.Ops.PerAgentMetrics one series per device and gauge, labelled by DID
// (agent) and the name in its card (name, cut to maxNameLabel bytes):
//
//	torpor_relay_fleet_devices{state,tenant}                  devices per console state and tenant
//	torpor_relay_agent_next_wake_timestamp_seconds{agent,name} the wake its schedule promises (absent: none)
//	torpor_relay_agent_last_pulse_timestamp_seconds{agent,name} its latest verified pulse (absent: none)
//	torpor_relay_agent_asleep{agent,name}                     1 asleep, else 0
//	torpor_relay_agent_overdue{agent,name}                    1 overdue, else 0
//	torpor_relay_agent_held_actions{agent,name}               actions waiting for the owner
//	torpor_relay_agent_key_packages{agent,name}               KeyPackages left in its pool
//	torpor_relay_agent_queue_share{agent,name}                its queue's share of its bounds (0-1)
//	torpor_relay_agent_last_wake_awake_seconds{agent,name}    how long its last completed wake was awake (absent: unknown)
//
// and the board's health gauges of metrics_health.go.
//
// The tenant label is a tenant's owner DID, bounded as the tenant
// counters are (tenantMetrics.label: the first --tenant-metrics-limit
// tenants, then "other"), and "" for the devices in no tenant (every
// device of a relay without tenants), which Prometheus stores as no
// label. Every state of "" and of each tenant's label is sent, zeros
// included: at most (limit+2)×5 series. The metrics are the host's:
// a device of a tenant whose owner's list does not say hostSeesDevices
// has no per-agent series (tenantIndex.hidden; docs/tenants.md).
type fleetCollector metrics

// maxNameLabel bounds the name label: a card's name is the device's to
// choose.
const maxNameLabel = 64

var (
	fleetDevicesDesc = prometheus.NewDesc("torpor_relay_fleet_devices",
		"Devices in each state of the fleet console, by tenant (owner DID, other past --tenant-metrics-limit, empty for none).", []string{"state", "tenant"}, nil)
	agentLabels = []string{"agent", "name"}
	agentGauges = []*prometheus.Desc{
		prometheus.NewDesc("torpor_relay_agent_next_wake_timestamp_seconds", "The wake or pulse the device's schedule promises next (Unix time).", agentLabels, nil),
		prometheus.NewDesc("torpor_relay_agent_last_pulse_timestamp_seconds", "The time of the device's latest verified liveness pulse (Unix time).", agentLabels, nil),
		prometheus.NewDesc("torpor_relay_agent_asleep", "1 while the device is asleep as its schedule says, else 0.", agentLabels, nil),
		prometheus.NewDesc("torpor_relay_agent_overdue", "1 while a wake or pulse the device's schedule promised is later than the grace, else 0.", agentLabels, nil),
		prometheus.NewDesc("torpor_relay_agent_held_actions", "Actions the device holds for its owner's confirmation (from its signed status).", agentLabels, nil),
		prometheus.NewDesc("torpor_relay_agent_key_packages", "KeyPackages left in the device's pool at the relay.", agentLabels, nil),
		prometheus.NewDesc("torpor_relay_agent_queue_share", "The device's queue as a share of its bounds (the fuller of messages and bytes).", agentLabels, nil),
		prometheus.NewDesc("torpor_relay_agent_last_wake_awake_seconds", "How long the device's last completed wake was awake (from its signed status).", agentLabels, nil),
	}
)

func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- fleetDevicesDesc
	if c.s.cfg.Ops.PerAgentMetrics {
		for _, d := range agentGauges {
			ch <- d
		}
		for _, d := range healthGauges {
			ch <- d
		}
	}
}

func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	if s.view == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := s.view.Build(ctx, s.clk.Now())
	if err != nil {
		s.log.Error("metrics: the fleet view", "err", err)
		return
	}
	x, err := s.readTenants()
	if err != nil {
		s.log.Error("metrics: the tenants", "err", err)
		return
	}
	labels := c.tenantLabels(x)
	n := map[string]map[string]int{} // tenant label -> state -> devices
	for _, l := range labels {
		n[l] = map[string]int{}
	}
	for _, d := range f.Devices {
		l := ""
		if i, ok := x.of[d.DID]; ok {
			l = c.tenants.label(x.tenants[i].Owner)
		}
		n[l][d.State]++
		if s.cfg.Ops.PerAgentMetrics && !x.hidden(d.DID) {
			agentMetrics(ch, d)
		}
	}
	for _, l := range labels {
		for _, st := range operatorapi.States {
			ch <- prometheus.MustNewConstMetric(fleetDevicesDesc, prometheus.GaugeValue, float64(n[l][st]), st, l)
		}
	}
}

// tenantLabels are the tenant labels of x's devices: "" (no tenant) and
// each tenant's, once each.
func (c *fleetCollector) tenantLabels(x tenantIndex) []string {
	labels := []string{""}
	for _, t := range x.tenants {
		if l := c.tenants.label(t.Owner); !slices.Contains(labels, l) {
			labels = append(labels, l)
		}
	}
	return labels
}

// nameLabel is a device's name as its series' name label.
func nameLabel(name string) string {
	if len(name) > maxNameLabel {
		name = strings.ToValidUTF8(name[:maxNameLabel], "")
	}
	return name
}

// agentName is the name label of agent (its card's name).
func (s *Relay) agentName(agent string) string {
	st, err := s.cfg.Stores.States.Get(context.Background(), agent)
	if err != nil {
		return ""
	}
	return nameLabel(console.CardName(st.Card))
}

// agentMetrics sends d's per-agent gauges.
func agentMetrics(ch chan<- prometheus.Metric, d operatorapi.Device) {
	name := nameLabel(d.Name)
	g := func(i int, v float64) {
		ch <- prometheus.MustNewConstMetric(agentGauges[i], prometheus.GaugeValue, v, d.DID, name)
	}
	if d.Expected != nil {
		g(0, float64(d.Expected.Unix()))
	}
	if d.Pulse != nil && d.Pulse.Verified {
		g(1, float64(d.Pulse.At.Unix()))
	}
	g(2, flag(d.State == operatorapi.StateAsleep))
	g(3, flag(d.State == operatorapi.StateOverdue))
	g(4, float64(d.HeldCount))
	g(5, float64(d.KeyPackages.Left))
	g(6, d.Queue.Share)
	if d.LastAwakeMs > 0 {
		g(7, float64(d.LastAwakeMs)/1000)
	}
	healthMetrics(ch, d.DID, name, d.Health) // metrics_health.go
}

func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
