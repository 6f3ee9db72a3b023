package relay

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/httpjson"
	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// maxTenantBody bounds the body of PUT /operator/tenants/{did}: a quotas
// object is a few hundred bytes.
const maxTenantBody = 4 << 10

// serveTenantPut is PUT /operator/tenants/{did}, for the relay's own
// operators (the host): it makes the owner a tenant with the body's
// quotas, or sets the quotas of a tenant the ledger holds, at once and at
// every relay of the ledger, without a restart (docs/tenants.md, "The
// host's endpoints"). The body is the quotas object of the --tenants file
// ({"quotas": {...}}, read strictly). Quotas only bound what comes next:
// a tenant already past a lowered quota keeps what it holds and is
// refused more. The answer is the tenant's line of GET /operator/tenants
// (tenantList).
// Taken or refused, it is in the audit log (action tenant).
func (s *Relay) serveTenantPut(w http.ResponseWriter, r *http.Request) {
	caller, ok := s.operator(w, r)
	if !ok {
		return
	}
	owner, err := did.Parse(r.PathValue("did"))
	rec := audit.Record{Operator: caller.String(), Action: audit.ActionTenant, Detail: "quotas of " + r.PathValue("did"), Outcome: audit.OK}
	if len(rec.Detail) > 240 {
		rec.Detail = rec.Detail[:240] + "…"
	}
	refuse := func(status int, code, reason, message string) {
		rec.Outcome, rec.Reason = audit.Refused, reason
		s.record(r.Context(), rec)
		httpjson.Write(w, status, map[string]any{"error": code, "message": message})
	}
	if !s.operators[caller.String()] {
		refuse(http.StatusForbidden, "not_operator", "not the relay's operator", "tenants and their quotas are set by the relay's own operators")
		return
	}
	if err != nil {
		refuse(http.StatusBadRequest, "bad_request", "not a DID", "the tenant is named by its owner's DID: "+err.Error())
		return
	}
	var req operatorapi.TenantPut
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxTenantBody))
	dec.DisallowUnknownFields()
	if err = dec.Decode(&req); err == nil {
		err = req.Quotas.Check()
	}
	if err != nil {
		refuse(http.StatusBadRequest, "bad_request", "bad quotas", `the body is not {"quotas": {...}} with quotas of zero (no limit) or more: `+err.Error())
		return
	}
	if err := s.cfg.Stores.Tenants.Put(owner, req.Quotas); err != nil {
		rec.Outcome, rec.Reason = audit.Refused, "store"
		s.record(r.Context(), rec)
		s.storeFailed(w, err)
		return
	}
	q, _ := json.Marshal(req.Quotas)
	rec.Detail = "quotas of " + owner.String() + ": " + string(q)
	s.record(r.Context(), rec)
	s.log.Info("tenant quotas set", "tenant", owner.String(), "quotas", string(q), "operator", caller.String())
	l, err := s.tenantList(r.Context())
	if err != nil {
		s.storeFailed(w, err)
		return
	}
	for _, t := range l.Tenants {
		if t.Owner == owner.String() {
			httpjson.Write(w, http.StatusOK, t)
			return
		}
	}
	s.storeFailed(w, fmt.Errorf("tenants: the tenant %s just set is not in the ledger's list", owner))
}
