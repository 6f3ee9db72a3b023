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
	"slices"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/internal/safetext"
	"github.com/torpor-dev/torpor/store/agents"
)

//go:embed templates
var templates embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"short": shortDID,
	"ts":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"tsm":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04Z") },
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
	"shq":   func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" },
	"spark": sparklines,
}).ParseFS(templates, "templates/*.html"))

// shortDID is the start and end of a did:key, for a narrow column.
func shortDID(s string) string {
	const pre = "did:key:z6Mk"
	if len(s) < len(pre)+12 {
		return s
	}
	return s[:len(pre)+4] + "…" + s[len(s)-6:]
}

// human is a duration in seconds the way a person reads it.
func human(s int64) string {
	switch {
	case s < 0:
		return "-" + human(-s)
	case s < 90:
		return fmt.Sprintf("%d s", s)
	case s < 90*60:
		return fmt.Sprintf("%d min", (s+30)/60)
	case s < 48*3600:
		return fmt.Sprintf("%.1f h", float64(s)/3600)
	}
	return fmt.Sprintf("%.1f d", float64(s)/86400)
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

// view is what the templates get.
type view struct {
	Title, Operator, Origin, Why string
	Fleet                        operatorapi.Fleet
	Device                       *operatorapi.Device
	States                       []string
	State, Sort                  string
	RefreshMs                    int64
}

func (c *Console) render(w http.ResponseWriter, status int, name string, v view) {
	v.Origin = c.origin
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

// table returns the view of the fleet page and its rows.
func (c *Console) table(w http.ResponseWriter, r *http.Request, op string) (view, bool) {
	f, state, err := c.fleet(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return view{}, false
	}
	sort := r.URL.Query().Get("sort")
	if sort == "name" {
		slices.SortStableFunc(f.Devices, func(a, b operatorapi.Device) int { return cmp.Compare(a.Name, b.Name) })
	} else {
		sort = ""
	}
	return view{Title: "Devices", Operator: op, Fleet: f, States: operatorapi.States, State: state, Sort: sort, RefreshMs: c.cfg.Refresh.Milliseconds()}, true
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
	c.render(w, http.StatusOK, "device.html", view{Title: d.Name, Operator: op, Device: &d})
}
