package console

import (
	"context"
	"net/http"

	"github.com/torpor-dev/torpor/internal/httpjson"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// Tenants is a hosted relay's tenants as its own operators (the host)
// see them: quotas and totals, never a device (docs/tenants.md,
// "Scoping"). transport/relay implements it with the list GET
// /operator/tenants answers, so that the page, /fleet/api/tenants and
// torporctl tenant list show one computation.
type Tenants interface {
	Tenants(ctx context.Context) (operatorapi.TenantList, error)
}

// noTenants answers a request for the tenants of a relay that hosts
// none.
func (c *Console) noTenants(w http.ResponseWriter) bool {
	if c.cfg.Tenants != nil {
		return false
	}
	httpjson.Write(w, http.StatusNotFound, map[string]string{"error": "no_tenants", "message": "this relay hosts no tenants"})
	return true
}

// hostTenants reads the tenants for a request of the relay's own
// operators; it answers w itself and returns false when the relay hosts
// no tenants, the request is not the host's, or the read fails.
func (c *Console) hostTenants(w http.ResponseWriter, r *http.Request) (operatorapi.TenantList, bool) {
	if c.noTenants(w) || c.notHost(w, r, "the tenants") {
		return operatorapi.TenantList{}, false
	}
	l, err := c.cfg.Tenants.Tenants(r.Context())
	if err != nil {
		c.internal(w, err)
		return operatorapi.TenantList{}, false
	}
	return l, true
}

// serveAPITenants is GET /fleet/api/tenants: the TenantList, for the
// relay's own operators only (notHost).
func (c *Console) serveAPITenants(w http.ResponseWriter, r *http.Request) {
	l, ok := c.hostTenants(w, r)
	if !ok {
		return
	}
	httpjson.Write(w, http.StatusOK, l)
}

// serveTenants is the page of tenants: one row per tenant with its
// quotas and totals, the totals of all tenants and the devices in no
// tenant. A tenant's devices are linked only when its owner's list lets
// the host see them; a tenant's operator gets 403, as for the audit log.
func (c *Console) serveTenants(w http.ResponseWriter, r *http.Request, op string) {
	l, ok := c.hostTenants(w, r)
	if !ok {
		return
	}
	c.render(w, http.StatusOK, "tenants.html", view{Title: "Tenants", Operator: op, Host: true, Tenants: &l})
}
