package relay

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The update metrics (docs/updates.md, "Rollouts"):
//
//	torpor_relay_update_offers_total                 state-oks that offered a device an update
//	torpor_relay_update_reports_total{outcome}       install outcomes recorded in a rollout
//	torpor_relay_update_rollouts{state}              rollouts by state, the tenants' included
//	                                                 (read at scrape)
//	torpor_relay_update_rollout_devices{rollout,status}  a rollout of the relay's own
//	                                                 operators' devices: installed,
//	                                                 rolled_back, refused, pending, waiting
//
// The gauges are read from the rollouts store at scrape time, so every
// relay sharing it reports the same (one rollout record per rollout).
type updateMetrics struct {
	updateOffers  prometheus.Counter
	updateReports *prometheus.CounterVec
}

var (
	updateRolloutsDesc = prometheus.NewDesc("torpor_relay_update_rollouts", "Update rollouts by state.", []string{"state"}, nil)
	updateDevicesDesc  = prometheus.NewDesc("torpor_relay_update_rollout_devices",
		"Devices of an update rollout by status: installed, rolled_back, refused, pending (offered, not reported), waiting (wave not started).",
		[]string{"rollout", "status"}, nil)
)

func newUpdateMetrics(reg *prometheus.Registry, m *metrics) updateMetrics {
	u := updateMetrics{
		updateOffers: prometheus.NewCounter(prometheus.CounterOpts{Name: "torpor_relay_update_offers_total",
			Help: "State answers that offered a device the target of a rollout."}),
		updateReports: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "torpor_relay_update_reports_total",
			Help: "Install outcomes from devices' signed statuses recorded in a rollout, by outcome."}, []string{"outcome"}),
	}
	reg.MustRegister(u.updateOffers, u.updateReports, (*rolloutCollector)(m))
	return u
}

// rolloutCollector reads the rollouts at scrape time.
type rolloutCollector metrics

func (c *rolloutCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- updateRolloutsDesc
	ch <- updateDevicesDesc
}

func (c *rolloutCollector) Collect(ch chan<- prometheus.Metric) {
	mgr := c.s.rollouts
	if mgr == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rs, err := mgr.List(ctx)
	if err != nil {
		c.s.log.Error("metrics: reading the rollouts", "err", err)
		return
	}
	states := map[string]int{"running": 0, "paused": 0, "aborted": 0, "done": 0}
	for _, r := range rs {
		states[string(r.State)]++
		if r.Tenant != "" {
			continue // a tenant's: its ids are its own, its devices not the host's to count
		}
		n := r.Counts()
		for status, v := range map[string]int{"installed": n.Installed, "rolled_back": n.RolledBack, "refused": n.Refused, "pending": n.Pending, "waiting": n.Waiting} {
			ch <- prometheus.MustNewConstMetric(updateDevicesDesc, prometheus.GaugeValue, float64(v), r.ID, status)
		}
	}
	for st, n := range states {
		ch <- prometheus.MustNewConstMetric(updateRolloutsDesc, prometheus.GaugeValue, float64(n), st)
	}
}
