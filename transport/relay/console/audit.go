package console

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/httpjson"
	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// auditPageSize is how many records a page of /fleet/audit shows.
const auditPageSize = 50

// parseDID is the DID of a valid session's operator ("" gives the zero
// DID: no session, nothing to record).
func parseDID(s string) did.DID {
	d, _ := did.Parse(s)
	return d
}

// recordSession records a login or logout by op, refused when err is
// set. Nothing is recorded when no signature proved a DID (op is zero):
// anyone could fill the log with such requests. The login token and the
// cookie are never recorded.
func (c *Console) recordSession(r *http.Request, action string, op did.DID, err error) {
	if c.cfg.Audit == nil || op.IsZero() {
		return
	}
	rec := audit.Record{Time: c.clk.Now().UTC(), Operator: op.String(), Action: action, Outcome: audit.OK}
	if err != nil {
		rec.Outcome, rec.Reason = audit.Refused, err.Error()
	}
	if aerr := c.cfg.Audit.Append(context.WithoutCancel(r.Context()), rec); aerr != nil {
		c.log.Error("audit log: a record was lost", "action", action, "operator", rec.Operator, "err", aerr)
	}
}

// auditQuery reads before, limit and since from r.
func auditQuery(r *http.Request, limit int) (operatorapi.AuditQuery, error) {
	q := operatorapi.AuditQuery{Limit: limit}
	v := r.URL.Query()
	var err error
	if s := v.Get("before"); s != "" {
		if q.Before, err = strconv.ParseUint(s, 10, 64); err != nil {
			return q, errors.New("before: want a record's seq")
		}
	}
	if s := v.Get("limit"); s != "" {
		if q.Limit, err = strconv.Atoi(s); err != nil || q.Limit < 1 {
			return q, errors.New("limit: want a positive number")
		}
	}
	if s := v.Get("since"); s != "" {
		if q.Since, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return q, errors.New("since: want an RFC 3339 time")
		}
	}
	return q, nil
}

// auditPage reads one page of the log, cut at q.Since.
func (c *Console) auditPage(ctx context.Context, q operatorapi.AuditQuery) (operatorapi.AuditPage, error) {
	p, err := c.cfg.Audit.List(ctx, q.Before, q.Limit)
	if err != nil {
		return operatorapi.AuditPage{}, err
	}
	out := operatorapi.AuditPage{Records: []operatorapi.AuditRecord{}, Dropped: p.Dropped, Next: p.Next, Now: c.clk.Now().UTC()}
	for _, r := range p.Records {
		if !q.Since.IsZero() && r.Time.Before(q.Since) {
			out.Next = 0
			break
		}
		out.Records = append(out.Records, r)
	}
	return out, nil
}

// noAudit answers a request for the log of a relay that keeps none.
func (c *Console) noAudit(w http.ResponseWriter) bool {
	if c.cfg.Audit != nil {
		return false
	}
	httpjson.Write(w, http.StatusNotFound, map[string]string{"error": "no_audit_log", "message": "this relay keeps no audit log"})
	return true
}

func (c *Console) serveAPIAudit(w http.ResponseWriter, r *http.Request) {
	if c.noAudit(w) || c.notHost(w, r, "the audit log") {
		return
	}
	q, err := auditQuery(r, 0)
	if err != nil {
		httpjson.Write(w, http.StatusBadRequest, map[string]string{"error": "bad_request", "message": err.Error()})
		return
	}
	p, err := c.auditPage(r.Context(), q)
	if err != nil {
		c.internal(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, p)
}

// serveAudit is the audit log's page, newest first, auditPageSize
// records a page; "older" follows Next.
func (c *Console) serveAudit(w http.ResponseWriter, r *http.Request, op string) {
	if c.noAudit(w) || c.notHost(w, r, "the audit log") {
		return
	}
	q, err := auditQuery(r, auditPageSize)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q.Limit = min(q.Limit, audit.MaxPage)
	p, err := c.auditPage(r.Context(), q)
	if err != nil {
		c.internal(w, err)
		return
	}
	c.render(w, http.StatusOK, "audit.html", view{Title: "Audit log", Operator: op, Host: true, Audit: &p, Newest: q.Before != 0})
}

// notHost refuses (403) what, the host's alone, to an operator accepted
// only by Config.AlsoOperator (a tenant's): the audit log names every
// tenant's devices, the rollouts are the host's, the tenants' page shows
// every tenant.
func (c *Console) notHost(w http.ResponseWriter, r *http.Request, what string) bool {
	if c.auth.operators[OperatorOf(r.Context())] {
		return false
	}
	httpjson.Write(w, http.StatusForbidden, map[string]string{"error": "not_operator", "message": what + " are the relay's own operators'"})
	return true
}
