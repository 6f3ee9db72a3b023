package console

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// newAuditSite is newSite with an audit log.
func newAuditSite(t *testing.T) (*site, audit.Store) {
	t.Helper()
	st, err := audit.OpenBolt(filepath.Join(t.TempDir(), "audit.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newSiteWith(t, "", func(c *Config) { c.Audit = st }), st
}

// TestAuditSessions: a login, a replayed login link, a stranger's login
// and a logout are recorded (a stranger's refused, with why); a logout
// from another origin is refused and recorded; no token or cookie value
// reaches the log.
func TestAuditSessions(t *testing.T) {
	s, st := newAuditSite(t)
	tok := s.loginToken(t, s.op, s.clk.Now())
	a := s.do(t, "GET", "/fleet/login?token="+url.QueryEscape(tok), nil, nil)
	cookie := a.cookie
	s.do(t, "GET", "/fleet/login?token="+url.QueryEscape(tok), nil, nil)
	stranger := didtest.Key(t, 21)
	s.do(t, "GET", "/fleet/login?token="+url.QueryEscape(s.loginToken(t, stranger, s.clk.Now())), nil, nil)
	s.do(t, "GET", "/fleet/login?token=garbage", nil, nil)
	s.do(t, "POST", "/fleet/logout", map[string]string{"Origin": "https://evil.example"}, cookie)
	if a := s.do(t, "POST", "/fleet/logout", map[string]string{"Origin": s.origin}, cookie); a.status != http.StatusSeeOther {
		t.Fatalf("logout: %d %s", a.status, a.body)
	}
	p, err := st.List(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	op := s.op.DID().String()
	want := []struct{ operator, action, outcome, reason string }{
		{op, "logout", "ok", ""},
		{op, "logout", "refused", "request from another origin"},
		{stranger.DID().String(), "login", "refused", errNotOperator.Error()},
		{op, "login", "refused", "this login link was used already; run torporctl fleet open again"},
		{op, "login", "ok", ""},
	}
	if len(p.Records) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(p.Records), len(want), p.Records)
	}
	for i, w := range want {
		r := p.Records[i]
		if r.Operator != w.operator || r.Action != w.action || r.Outcome != w.outcome || r.Reason != w.reason || !r.Time.Equal(t0) {
			t.Errorf("record %d = %+v, want %+v at %v", i, r, w, t0)
		}
		if b, _ := json.Marshal(r); strings.Contains(string(b), tok[:20]) || strings.Contains(string(b), cookie.Value) {
			t.Errorf("record %d holds the token or the cookie: %s", i, b)
		}
	}
}

// TestAuditPageAndAPI: the page and the API need an operator's session
// or API token; the page lists the records newest first, 50 a page, with
// a link to older ones under the same strict CSP; the API pages with
// before and limit and stops at since; the fleet page links to the log.
func TestAuditPageAndAPI(t *testing.T) {
	s, st := newAuditSite(t)
	for i := range 60 {
		r := audit.Record{Time: t0.Add(time.Duration(i) * time.Minute), Operator: s.op.DID().String(), Action: audit.ActionAdmit,
			Device: s.dev.DID().String(), Outcome: audit.OK}
		if err := st.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if a := s.do(t, "GET", "/fleet/audit", nil, nil); a.status != http.StatusUnauthorized || strings.Contains(a.body, "admit") {
		t.Errorf("page without a session: %d", a.status)
	}
	if a := s.do(t, "GET", "/fleet/api/audit", nil, nil); a.status != http.StatusUnauthorized {
		t.Errorf("API without a token: %d", a.status)
	}
	s.clk.Advance(61 * time.Minute)
	c := s.login(t)
	if a := s.do(t, "GET", "/fleet", nil, c); !strings.Contains(a.body, `href="/fleet/audit"`) {
		t.Errorf("the fleet page does not link to the audit log")
	}
	a := s.do(t, "GET", "/fleet/audit", nil, c)
	if a.status != 200 || strings.Count(a.body, "<tr><td>") != 50 || !strings.Contains(a.body, "12:59:00Z") || strings.Contains(a.body, "12:10:00Z") ||
		!strings.Contains(a.body, `href="/fleet/audit?before=12"`) {
		t.Fatalf("audit page: %d\n%s", a.status, a.body)
	}
	if csp := a.h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("CSP %q", csp)
	}
	if a := s.do(t, "GET", "/fleet/audit?before=12", nil, c); strings.Count(a.body, "<tr><td>") != 11 || !strings.Contains(a.body, `href="/fleet/audit"`) {
		t.Errorf("older page:\n%s", a.body)
	}
	p := s.apiAudit(t, "?limit=5")
	if len(p.Records) != 5 || p.Records[0].Seq != 61 || p.Next != 57 {
		t.Errorf("API limit 5: %d records from %d, next %d; want the login and 4 admissions, next 57", len(p.Records), p.Records[0].Seq, p.Next)
	}
	p = s.apiAudit(t, "?since="+t0.Add(55*time.Minute).Format(time.RFC3339))
	if len(p.Records) != 6 || p.Next != 0 || !p.Now.Equal(t0.Add(61*time.Minute)) {
		t.Errorf("API since 00:55: %d records, next %d, now %v; want the login and 5 admissions, no next", len(p.Records), p.Next, p.Now)
	}
}

// apiAudit reads the API with an operator's API token.
func (s *site) apiAudit(t *testing.T, query string) operatorapi.AuditPage {
	t.Helper()
	tok, err := bearer.IssuePurpose(s.op, s.origin, bearer.PurposeFleet, s.clk.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a := s.do(t, "GET", "/fleet/api/audit"+query, map[string]string{"Authorization": bearer.Authorization(tok)}, nil)
	var p operatorapi.AuditPage
	if err := json.Unmarshal([]byte(a.body), &p); a.status != 200 || err != nil {
		t.Fatalf("API%s: %d %s", query, a.status, a.body)
	}
	return p
}
