package relay

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/torpor-dev/torpor/did"
)

// metrics are the relay's Prometheus series, in a registry of its own
// (never the global one, so two relays can live in one test process).
//
//	torpor_relay_enqueues_total{outcome}      queued, full_messages, full_bytes,
//	                                          full_peer, too_large, refused,
//	                                          invalid, no_object, unauthenticated,
//	                                          error
//	torpor_relay_queue_messages               live queued records, all agents
//	torpor_relay_queue_bytes                  their body bytes
//	torpor_relay_drain_latency_seconds        enqueue → device acknowledgement
//	torpor_relay_answers_total{route,status}  HTTP answers by route pattern and status
//	torpor_relay_live_requests_total{outcome} answered, unanswered
//	torpor_relay_links                        device links up
//	torpor_relay_purged_total                 expired records purged
//	torpor_relay_key_packages_served_total
//	torpor_relay_update_*                     rollouts (metrics_update.go)
//
// With Stores.Tenants, also torpor_relay_tenant_requests_total{tenant}
// (senders' requests to a tenant's devices) and
// torpor_relay_tenant_refusals_total{tenant,quota} (those a quota
// refused; tenants.go), with a label per tenant for at most
// Ops.TenantMetricsLimit tenants and "other" for the rest.
//
// With Config.Ops.PerAgentMetrics, also torpor_relay_agent_enqueues_total{agent,
// outcome}, torpor_relay_agent_queue_messages{agent,name} and
// torpor_relay_agent_queue_bytes{agent,name}, and the fleet's gauges
// (metrics_fleet.go); none of them for a device of a tenant whose owner
// does not let the host see its devices (tenantIndex.hidden).
type metrics struct {
	s             *Relay
	reg           *prometheus.Registry
	enqueues      *prometheus.CounterVec
	agentEnqueues *prometheus.CounterVec
	answers       *prometheus.CounterVec
	liveRequests  *prometheus.CounterVec
	drain         prometheus.Histogram
	links         prometheus.Gauge
	purged        prometheus.Counter
	keyPackages   prometheus.Counter
	lastResort    prometheus.Counter
	updateMetrics                // metrics_update.go
	tenants       *tenantMetrics // nil without Stores.Tenants

	depthDesc, bytesDesc           *prometheus.Desc
	agentDepthDesc, agentBytesDesc *prometheus.Desc

	// The children of enqueues and answers already looked up, by outcome
	// and by answerKey: every request counts in both, and their label
	// values are few (outcomes, route patterns, status codes), so a
	// lookup by label values (hashing, a lock) per request is not needed.
	children        sync.RWMutex
	enqueueChildren map[string]prometheus.Counter
	answerChildren  map[answerKey]prometheus.Counter
}

type answerKey struct {
	route  string
	status int
}

func newMetrics(s *Relay) *metrics {
	m := &metrics{
		s:   s,
		reg: prometheus.NewRegistry(),

		enqueueChildren: map[string]prometheus.Counter{},
		answerChildren:  map[answerKey]prometheus.Counter{},
		enqueues: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "torpor_relay_enqueues_total", Help: "Requests for agents that were not live, by outcome.",
		}, []string{"outcome"}),
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "torpor_relay_answers_total", Help: "HTTP answers by route and status code.",
		}, []string{"route", "status"}),
		liveRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "torpor_relay_live_requests_total", Help: "Requests forwarded live over a device link, by outcome.",
		}, []string{"outcome"}),
		drain: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "torpor_relay_drain_latency_seconds", Help: "Time from enqueue to the device's acknowledgement.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 14), // 10 ms .. ~7.6 days
		}),
		links:       prometheus.NewGauge(prometheus.GaugeOpts{Name: "torpor_relay_links", Help: "Device links up."}),
		purged:      prometheus.NewCounter(prometheus.CounterOpts{Name: "torpor_relay_purged_total", Help: "Expired queue records purged."}),
		keyPackages: prometheus.NewCounter(prometheus.CounterOpts{Name: "torpor_relay_key_packages_served_total", Help: "KeyPackages handed out."}),
		lastResort: prometheus.NewCounter(prometheus.CounterOpts{Name: "torpor_relay_last_resort_key_packages_served_total",
			Help: "Last-resort KeyPackages handed out (the pool was empty); also counted in torpor_relay_key_packages_served_total."}),
		depthDesc: prometheus.NewDesc("torpor_relay_queue_messages", "Live queued records of all agents.", nil, nil),
		bytesDesc: prometheus.NewDesc("torpor_relay_queue_bytes", "Body bytes of the live queued records of all agents.", nil, nil),
	}
	m.reg.MustRegister(m.enqueues, m.answers, m.liveRequests, m.drain, m.links, m.purged, m.keyPackages, m.lastResort, (*queueCollector)(m), (*fleetCollector)(m),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.updateMetrics = newUpdateMetrics(m.reg, m)
	if s.cfg.Stores.Tenants != nil {
		m.tenants = newTenantMetrics(s.cfg.Ops.TenantMetricsLimit)
		m.reg.MustRegister(m.tenants.requests, m.tenants.refusals, m.tenants.waits)
	}
	if s.cfg.Ops.PerAgentMetrics {
		m.agentEnqueues = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "torpor_relay_agent_enqueues_total", Help: "Requests for an agent that was not live, by outcome.",
		}, []string{"agent", "outcome"})
		m.agentDepthDesc = prometheus.NewDesc("torpor_relay_agent_queue_messages", "Live queued records of one agent.", agentLabels, nil)
		m.agentBytesDesc = prometheus.NewDesc("torpor_relay_agent_queue_bytes", "Body bytes of one agent's live queued records.", agentLabels, nil)
		m.reg.MustRegister(hostsAgents{m.agentEnqueues, s})
	}
	return m
}

func (m *metrics) enqueue(agent, outcome string) {
	m.children.RLock()
	c := m.enqueueChildren[outcome]
	m.children.RUnlock()
	if c == nil {
		c = m.enqueues.WithLabelValues(outcome)
		m.children.Lock()
		m.enqueueChildren[outcome] = c
		m.children.Unlock()
	}
	c.Inc()
	if m.agentEnqueues != nil {
		m.agentEnqueues.WithLabelValues(agent, outcome).Inc()
	}
}

func (m *metrics) live(agent, outcome string) { m.liveRequests.WithLabelValues(outcome).Inc() }

func (m *metrics) acked(agent did.DID, waited []time.Duration) {
	for _, d := range waited {
		m.drain.Observe(d.Seconds())
	}
}

// queueCollector reads queue depth from the store at scrape time, so the
// gauges are exact (expired records excluded) without bookkeeping.
type queueCollector metrics

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.depthDesc
	ch <- c.bytesDesc
	if c.agentDepthDesc != nil {
		ch <- c.agentDepthDesc
		ch <- c.agentBytesDesc
	}
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	ids, err := s.cfg.Stores.States.Agents(context.Background())
	if err != nil {
		return
	}
	var x tenantIndex // read only for the per-agent series it scopes
	if c.agentDepthDesc != nil {
		if x, err = s.readTenants(); err != nil {
			s.log.Error("metrics: the tenants", "err", err)
			return
		}
	}
	now := s.clk.Now()
	var msgs, bytes float64
	for _, a := range ids {
		st, err := s.cfg.Stores.Queue.Stats(context.Background(), a, now)
		if err != nil {
			continue
		}
		msgs += float64(st.Messages)
		bytes += float64(st.Bytes)
		if c.agentDepthDesc != nil && !x.hidden(a) {
			name := s.agentName(a)
			ch <- prometheus.MustNewConstMetric(c.agentDepthDesc, prometheus.GaugeValue, float64(st.Messages), a, name)
			ch <- prometheus.MustNewConstMetric(c.agentBytesDesc, prometheus.GaugeValue, float64(st.Bytes), a, name)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.depthDesc, prometheus.GaugeValue, msgs)
	ch <- prometheus.MustNewConstMetric(c.bytesDesc, prometheus.GaugeValue, bytes)
}

// hostsAgents collects a per-agent vector (its first label the agent's
// DID) without the series of the devices the host may not see
// (tenantIndex.hidden), read at each scrape: a device whose owner later
// allows it (or stops allowing it) shows (or leaves) at the next one.
type hostsAgents struct {
	vec *prometheus.CounterVec
	s   *Relay
}

func (h hostsAgents) Describe(ch chan<- *prometheus.Desc) { h.vec.Describe(ch) }

func (h hostsAgents) Collect(ch chan<- prometheus.Metric) {
	x, err := h.s.readTenants()
	if err != nil {
		h.s.log.Error("metrics: the tenants", "err", err)
		return
	}
	all := make(chan prometheus.Metric)
	go func() {
		h.vec.Collect(all)
		close(all)
	}()
	for m := range all {
		var pb dto.Metric
		if err := m.Write(&pb); err == nil && len(pb.GetLabel()) > 0 && x.hidden(labelValue(&pb, "agent")) {
			continue
		}
		ch <- m
	}
}

// labelValue is the value of m's label name, "" without it.
func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// instrument counts every answer by route pattern and status.
func (m *metrics) instrument(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		k := answerKey{route, status}
		m.children.RLock()
		c := m.answerChildren[k]
		m.children.RUnlock()
		if c == nil {
			c = m.answers.WithLabelValues(route, strconv.Itoa(status))
			m.children.Lock()
			m.answerChildren[k] = c
			m.children.Unlock()
		}
		c.Inc()
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController and the WebSocket upgrade reach the
// connection (Hijack, Flush).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
