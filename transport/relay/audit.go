package relay

import (
	"context"
	"net/http"
	"strings"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// record appends rec to the audit log (Config.Stores.Audit; none when
// nil), dated on the relay's clock. A store that fails loses the record,
// which is logged (without the record's detail), never the request.
func (s *Relay) record(ctx context.Context, rec audit.Record) {
	st := s.cfg.Stores.Audit
	if st == nil {
		return
	}
	rec.Time = s.clk.Now().UTC()
	if err := st.Append(context.WithoutCancel(ctx), rec); err != nil {
		s.log.Error("audit log: a record was lost", "action", rec.Action, "operator", rec.Operator, "err", err)
	}
}

// operatorAction is the audited action of an operator request: admit,
// purge, rollouts (the relay's and the tenants') and update uploads change
// what the relay holds; a queue listing reads only and
// is not audited ("").
func operatorAction(r *http.Request) string {
	switch {
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/operator/queue/"):
		return audit.ActionPurge
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/admit"):
		return audit.ActionAdmit
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, operatorapi.RolloutsPath),
		r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/operator/tenants/") && strings.Contains(r.URL.Path, "/rollouts"):
		return audit.ActionRollout
	case r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/operator/updates/"),
		r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/operator/tenants/") && strings.Contains(r.URL.Path, "/updates/"):
		return audit.ActionUpdate
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/operator/tenants/") && strings.Contains(r.URL.Path, "/updates/blob/"):
		return audit.ActionUpdateRemove
	}
	return ""
}

// recordOperator records the outcome of an operator request by op (the
// zero DID when no token proved one: such requests are not recorded,
// since anyone could fill the log with them). An empty reason is ok.
func (s *Relay) recordOperator(r *http.Request, op did.DID, detail, reason string) {
	action := operatorAction(r)
	if action == "" || op.IsZero() {
		return
	}
	rec := audit.Record{Operator: op.String(), Action: action, Device: r.PathValue("did"), Detail: detail, Outcome: audit.OK}
	if len(rec.Device) > 200 {
		rec.Device = rec.Device[:200] + "…"
	}
	if reason != "" {
		rec.Outcome, rec.Reason = audit.Refused, reason
	}
	s.record(r.Context(), rec)
}
