package relay

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/torpor-dev/torpor/did"
)

// tenantOther is the tenant label of the tenants past the limit.
const tenantOther = "other"

// tenantMetrics counts senders' requests by tenant with a bounded number
// of tenant labels: the first limit tenants seen keep their owner DID as
// their label, the others share "other", so /metrics stays small however
// many tenants a relay hosts.
type tenantMetrics struct {
	requests, refusals, waits *prometheus.CounterVec
	limit                     int
	mu                        sync.Mutex
	labelled                  map[string]bool
}

func newTenantMetrics(limit int) *tenantMetrics {
	if limit <= 0 {
		limit = 100
	}
	return &tenantMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "torpor_relay_tenant_requests_total",
			Help: "Senders' requests to a tenant's devices, refused ones included, by tenant (owner DID, or other past --tenant-metrics-limit).",
		}, []string{"tenant"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "torpor_relay_tenant_refusals_total",
			Help: "Senders' requests refused by a tenant's quota, by tenant (owner DID, or other) and quota.",
		}, []string{"tenant", "quota"}),
		waits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "torpor_relay_tenant_waits_total",
			Help: "Senders' requests that waited for a turn among their tenant's --tenant-inflight requests, by tenant (owner DID, or other).",
		}, []string{"tenant"}),
		limit: limit, labelled: map[string]bool{},
	}
}

// label returns owner's label: its DID while there is room, else "other".
func (t *tenantMetrics) label(owner did.DID) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	o := owner.String()
	if !t.labelled[o] {
		if len(t.labelled) >= t.limit {
			return tenantOther
		}
		t.labelled[o] = true
	}
	return o
}

// tenantRequest counts one request of owner's senders.
func (m *metrics) tenantRequest(owner did.DID) {
	if m.tenants != nil {
		m.tenants.requests.WithLabelValues(m.tenants.label(owner)).Inc()
	}
}

// tenantRefusal counts one request of owner's senders refused by quota.
func (m *metrics) tenantRefusal(owner did.DID, quota string) {
	if m.tenants != nil {
		m.tenants.refusals.WithLabelValues(m.tenants.label(owner), quota).Inc()
	}
}

// tenantWait counts one request of owner's senders that waited for its
// tenant's turn (tenantgate.go).
func (m *metrics) tenantWait(owner did.DID) {
	if m.tenants != nil {
		m.tenants.waits.WithLabelValues(m.tenants.label(owner)).Inc()
	}
}
