package console

import (
	"bytes"
	"cmp"
	"embed"
	"errors"
	"fmt"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/internal/safetext"
	"github.com/torpor-dev/torpor/store/agents"
)

//go:embed templates
var templates embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"short": shortDID,
	"inc":   func(i int) int { return i + 1 },
	"ts":    func(t time.Time) template.HTML { return timeTag(t, "seconds", "2006-01-02 15:04:05") },
	"tsm":   func(t time.Time) template.HTML { return timeTag(t, "datetime", "2006-01-02 15:04") },
	"when":  func(t time.Time) template.HTML { return timeTag(t, "datetime", "2006-01-02 15:04") },
	"clock": func(t time.Time) template.HTML { return timeTag(t, "time", "15:04") },
	"late":  func(now time.Time, t *time.Time) string { return human(int64(now.Sub(*t) / time.Second)) },
	"dur":   func(s operatorapi.Seconds) string { return human(int64(s)) },
	"ago":   func(s operatorapi.Seconds) string { return human(int64(s)) },
	"rel": func(s operatorapi.Seconds) string {
		if s < 0 {
			return "opened " + human(int64(-s)) + " ago"
		}
		return "in " + human(int64(s))
	},
	"pct":   func(f float64) string { return fmt.Sprintf("%.0f %%", f*100) },
	"bytes": byteSize,
	"near":  nearQuota,
	// byteHours is whole byte-hours of thousandths (operatorapi.Tenant's
	// MilliByteHours).
	"byteHours": func(milli int64) int64 { return milli / 1000 },
	"shq":       func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" },

	"health": healthItems, // the device page's health section (health.go)
	"spark":  sparklines,  // the device page's history of wakes (history.go)
	"mark":   markOf,      // a fleet row's update mark (software.go)
	"word":   func(o string) string { w, _ := outcomeWord(o); return w },
	"bad":    func(o string) bool { _, b := outcomeWord(o); return b },
}).ParseFS(templates, "templates/*.html"))

// shortDID is the start and end of a did:key, for a narrow column.
func shortDID(s string) string {
	const pre = "did:key:z6Mk"
	if len(s) < len(pre)+12 {
		return s
	}
	return s[:len(pre)+4] + "…" + s[len(s)-6:]
}

// timeTag is t as a <time> element: its text in UTC, which the page's
// script (static/console.js) replaces with the browser's time zone in
// format ("seconds", "datetime" or "time"), and UTC in its title. Only
// for text, not attributes.
func timeTag(t time.Time, format, layout string) template.HTML {
	t = t.UTC()
	return template.HTML(`<time datetime="` + t.Format(time.RFC3339) + `" data-format="` + format + `" title="UTC ` +
		t.Format("2006-01-02 15:04:05") + `">` + t.Format(layout) + ` UTC</time>`)
}

// human is a duration in seconds the way a person reads it: "45 s",
// "5 min" (up to 90 minutes), "3 h 12 min", "2 d 4 h".
func human(s int64) string {
	m := (s + 30) / 60
	switch {
	case s < 0:
		return "-" + human(-s)
	case s < 90:
		return fmt.Sprintf("%d s", s)
	case m < 90:
		return fmt.Sprintf("%d min", m)
	case m < 48*60:
		return unitPair(m/60, "h", m%60, "min")
	}
	h := (s + 1800) / 3600
	return unitPair(h/24, "d", h%24, "h")
}

// unitPair is "3 h 12 min", or "3 h" when the second figure is zero.
func unitPair(a int64, ua string, b int64, ub string) string {
	if b == 0 {
		return fmt.Sprintf("%d %s", a, ua)
	}
	return fmt.Sprintf("%d %s %d %s", a, ua, b, ub)
}

func byteSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// nearQuota reports whether used (an int or int64) is at least 80 % of
// limit, a quota where zero is no limit.
func nearQuota(used any, limit int64) bool {
	var u int64
	switch v := used.(type) {
	case int:
		u = int64(v)
	case int64:
		u = v
	}
	return limit > 0 && u*5 >= limit*4
}

// view is what the templates get.
type view struct {
	Title, Operator, Origin, Why string
	// Host says Operator is one of Config.Operators, who see the audit
	// log (a tenant's operator does not: docs/tenants.md).
	Host        bool
	Fleet       operatorapi.Fleet
	Device      *operatorapi.Device
	Audit       *operatorapi.AuditPage
	Newest      bool // the page is not the newest: link to it
	States      []string
	State, Sort string
	RefreshMs   int64
	// Query is what the fleet page shows; Rows, Prev and Next are the
	// URLs of its rows and of the pages before and after it ("" if none).
	Query            operatorapi.Query
	Rows, Prev, Next string
	Pills            []pill
	// Rollouts is the rollouts page's (rollouts.go); Updates the device
	// page's rollouts of that device.
	Rollouts    []operatorapi.Rollout
	Updates     []operatorapi.DeviceUpdate
	HasRollouts bool
	// Tenants is the tenants' page's (tenants.go); HasTenants says the
	// relay hosts tenants (render sets it): the header links the page
	// for the host.
	Tenants    *operatorapi.TenantList
	HasTenants bool
}

// pill is a link of the state filter.
type pill struct {
	Name, URL string
	On        bool
}

func (c *Console) render(w http.ResponseWriter, status int, name string, v view) {
	v.Origin, v.HasTenants = c.origin, c.cfg.Tenants != nil
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, v); err != nil {
		c.log.Error("fleet console template", "template", name, "err", err)
		http.Error(w, "the relay failed to render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(neutralise(buf.Bytes()))
}

// neutralise replaces, in a rendered page, every control or invisible
// formatting character but newline and tab (package safetext) with its
// code point in visible text ("<U+202E>", escaped): a name a device
// published cannot reverse or hide what is around it. The templates hold
// none, so only what devices and relays published is changed.
func neutralise(page []byte) []byte {
	if safetext.ShowLines(string(page)) == string(page) {
		return page
	}
	var b bytes.Buffer
	for _, r := range string(page) {
		if r != '\n' && r != '\t' && safetext.Hidden(r) {
			fmt.Fprintf(&b, "&lt;%U&gt;", r)
		} else {
			b.WriteRune(r) // U+FFFD for a byte that is not UTF-8
		}
	}
	return b.Bytes()
}

// loginPage answers whoever is not logged in, saying why.
func (c *Console) loginPage(w http.ResponseWriter, status int, why error) {
	v := view{Title: "Log in"}
	if !errors.Is(why, errNoSession) {
		v.Why = "Refused: " + why.Error() + "."
	}
	c.render(w, status, "login.html", v)
}

// table returns the view of the fleet page and its rows, or answers a
// query it refuses with 400.
func (c *Console) table(w http.ResponseWriter, r *http.Request, op string) (view, bool) {
	f, q, err := c.fleet(r, operatorapi.DefaultPer)
	var bad badQuery
	switch {
	case errors.As(err, &bad):
		http.Error(w, "Bad query: "+err.Error()+".", http.StatusBadRequest)
		return view{}, false
	case err != nil:
		c.internal(w, err)
		return view{}, false
	}
	v := view{Title: "Devices", Operator: op, Host: c.auth.operators[op], Fleet: f, States: operatorapi.States, State: q.State, Sort: q.Sort, Query: q,
		RefreshMs: c.cfg.Refresh.Milliseconds(), Rows: "/fleet/rows?" + pageQuery(q, f.Page)}
	if f.Page > 1 {
		v.Prev = "/fleet?" + pageQuery(q, min(f.Page-1, f.Pages))
	}
	if f.Page < f.Pages {
		v.Next = "/fleet?" + pageQuery(q, f.Page+1)
	}
	for _, st := range append([]string{""}, operatorapi.States...) {
		p := q
		p.State = st
		v.Pills = append(v.Pills, pill{Name: cmp.Or(st, "all"), URL: "/fleet?" + pageQuery(p, 1), On: st == q.State})
	}
	return v, true
}

// pageQuery is q's query string for page, leaving out the default size.
func pageQuery(q operatorapi.Query, page int) string {
	q.Page = page
	if q.Per == operatorapi.DefaultPer {
		q.Per = 0
	}
	if page == 1 {
		q.Page = 0
	}
	return q.Values().Encode()
}

func (c *Console) serveFleet(w http.ResponseWriter, r *http.Request, op string) {
	if v, ok := c.table(w, r, op); ok {
		c.render(w, http.StatusOK, "fleet.html", v)
	}
}

// serveRows answers the page's script with the summary and the table.
func (c *Console) serveRows(w http.ResponseWriter, r *http.Request, op string) {
	if v, ok := c.table(w, r, op); ok {
		c.render(w, http.StatusOK, "rows", v)
	}
}

func (c *Console) serveDevice(w http.ResponseWriter, r *http.Request, op string) {
	d, err := c.cfg.One(r.Context(), r.PathValue("did"), c.clk.Now())
	if errors.Is(err, agents.ErrUnknownAgent) {
		http.Error(w, "no device has published this agent", http.StatusNotFound)
		return
	}
	if err != nil {
		c.internal(w, err)
		return
	}
	c.render(w, http.StatusOK, "device.html", view{Title: d.Name, Operator: op, Host: c.auth.operators[op], Device: &d,
		Updates: c.deviceUpdates(r.Context(), d.DID), HasRollouts: c.cfg.Rollouts != nil && c.auth.operators[op]})
}
