package console

import (
	"embed"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/httpjson"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/store/shared"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// Config configures the console's HTTP side.
type Config struct {
	Source
	// PublicURL is the relay's public origin: the audience of login and
	// API tokens, and the only Origin a logout is accepted from.
	PublicURL string
	// Operators are the DIDs that may see the console. Required.
	Operators []string
	// AlsoOperator, when set, accepts other DIDs too (a hosted relay's
	// tenant operators, docs/tenants.md); what each sees is
	// Source.Visible's business, and only Operators see the audit log.
	AlsoOperator func(id string) bool
	// Secret signs session cookies (LoadSecret, or the fleet's shared
	// secret: store/shared). Required.
	Secret []byte
	// Spent remembers the login tokens accepted: the fleet's shared
	// memory (store/shared), or nil for the console's own, in memory.
	Spent shared.Spent
	// Refresh is how often the page asks for fresh rows; zero means 5 s.
	Refresh time.Duration
	// Audit, when set, records logins and logouts and is served at
	// /fleet/audit and /fleet/api/audit (audit.go).
	Audit audit.Store
	// Rollouts, when set, is served at /fleet/rollouts and
	// /fleet/api/rollouts, and on each device's page (rollouts.go).
	Rollouts Rollouts
	// Tenants, when set (a hosted relay), is served to the relay's own
	// operators at /fleet/tenants and /fleet/api/tenants (tenants.go).
	Tenants Tenants
	Clock   clock.Clock
	Logger  *slog.Logger
}

// Console serves /fleet and /fleet/api/.
type Console struct {
	cfg    Config
	origin string
	clk    clock.Clock
	auth   *auth
	log    *slog.Logger
}

//go:embed static
var static embed.FS

// New returns the console for cfg.
func New(cfg Config) (*Console, error) {
	if len(cfg.Operators) == 0 || len(cfg.Secret) < 32 || cfg.States == nil || cfg.Queue == nil || cfg.Up == nil || cfg.Bounds == nil {
		return nil, errors.New("console: Config needs Operators, a Secret of 32 bytes, States, Queue, Up and Bounds")
	}
	origin, err := bearer.NormalizeAudience(cfg.PublicURL)
	if err != nil {
		return nil, err
	}
	if cfg.Refresh == 0 {
		cfg.Refresh = 5 * time.Second
	}
	if cfg.Verified == nil {
		cfg.Verified = NewVerified(0)
	}
	if cfg.Spent == nil {
		cfg.Spent = shared.NewMemory().Spent("login", MaxSpentLogins)
	}
	c := &Console{cfg: cfg, origin: origin, clk: clock.Or(cfg.Clock), log: cfg.Logger}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	ops := map[string]bool{}
	for _, o := range cfg.Operators {
		id, err := did.Parse(o)
		if err != nil {
			return nil, err
		}
		ops[id.String()] = true
	}
	u, _ := url.Parse(origin)
	c.auth = &auth{operators: ops, also: cfg.AlsoOperator, secret: cfg.Secret, secure: u.Scheme == "https", now: c.clk.Now, spent: cfg.Spent,
		login: bearer.Verifier{Audience: origin, Clock: cfg.Clock, Purpose: bearer.PurposeFleetLogin, MaxLifetime: LoginTTL},
		api:   bearer.Verifier{Audience: origin, Clock: cfg.Clock, Purpose: bearer.PurposeFleet}}
	return c, nil
}

// Register adds the console's routes to m.
func (c *Console) Register(m *http.ServeMux) {
	m.HandleFunc("GET /fleet", c.page(c.serveFleet))
	m.HandleFunc("GET /fleet/rows", c.page(c.serveRows))
	m.HandleFunc("GET /fleet/device/{did}", c.page(c.serveDevice))
	m.HandleFunc("GET /fleet/login", c.serveLogin)
	m.HandleFunc("POST /fleet/logout", c.serveLogout)
	m.HandleFunc("GET /fleet/static/{file}", c.serveStatic)
	m.HandleFunc("GET /fleet/api/devices", c.api(c.serveAPIDevices))
	m.HandleFunc("GET /fleet/api/devices/{did}", c.api(c.serveAPIDevice))
	m.HandleFunc("GET /fleet/audit", c.page(c.serveAudit))
	m.HandleFunc("GET /fleet/api/audit", c.api(c.serveAPIAudit))
	m.HandleFunc("GET /fleet/rollouts", c.page(c.serveRollouts))
	m.HandleFunc("GET /fleet/api/rollouts", c.api(c.serveAPIRollouts))
	m.HandleFunc("GET /fleet/tenants", c.page(c.serveTenants))
	m.HandleFunc("GET /fleet/api/tenants", c.api(c.serveAPITenants))
}

// secure sets the headers of every console answer: a strict CSP (only
// this origin's script and style, nothing framed, no other origin
// contacted), no caching, a referrer only to this origin (a login URL
// carries a token; "no-referrer" would make browsers send "Origin: null"
// with the logout form).
func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "+
		"base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
}

// page wraps an HTML page for operators: anyone else gets the login page.
func (c *Console) page(h func(w http.ResponseWriter, r *http.Request, op string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		secure(w)
		op, err := c.auth.fromCookie(r)
		if err != nil {
			c.loginPage(w, http.StatusUnauthorized, err)
			return
		}
		h(w, r.WithContext(WithOperator(r.Context(), op)), op)
	}
}

// api wraps a JSON endpoint for operators (session cookie or API token).
func (c *Console) api(h func(w http.ResponseWriter, r *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		secure(w)
		op, err := c.auth.fromBearer(r)
		if errors.Is(err, errNoSession) {
			op, err = c.auth.fromCookie(r)
		}
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="torpor-fleet"`)
			httpjson.Write(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized", "message": err.Error()})
			return
		}
		h(w, r.WithContext(WithOperator(r.Context(), op)))
	}
}

func (c *Console) serveLogin(w http.ResponseWriter, r *http.Request) {
	secure(w)
	id, err := c.auth.redeem(r.Context(), r.URL.Query().Get("token"))
	c.recordSession(r, audit.ActionLogin, id, err)
	if err != nil {
		c.log.Warn("fleet console login refused", "err", err)
		c.loginPage(w, http.StatusForbidden, err)
		return
	}
	c.log.Info("fleet console login", "operator", id.String())
	http.SetCookie(w, c.auth.session(id.String()))
	http.Redirect(w, r, "/fleet", http.StatusSeeOther)
}

// serveLogout ends the session. It is the console's one state-changing
// endpoint, so it checks that the request comes from the console's own
// origin (Origin, which browsers send with every POST).
func (c *Console) serveLogout(w http.ResponseWriter, r *http.Request) {
	secure(w)
	op, _ := c.auth.fromCookie(r)
	if o := r.Header.Get("Origin"); o != c.origin {
		c.recordSession(r, audit.ActionLogout, parseDID(op), errors.New("request from another origin"))
		httpjson.Write(w, http.StatusForbidden, map[string]string{"error": "bad_origin", "message": "logout is accepted only from " + c.origin})
		return
	}
	c.recordSession(r, audit.ActionLogout, parseDID(op), nil)
	http.SetCookie(w, c.auth.logout())
	http.Redirect(w, r, "/fleet", http.StatusSeeOther)
}

func (c *Console) serveStatic(w http.ResponseWriter, r *http.Request) {
	secure(w)
	name := r.PathValue("file")
	b, err := static.ReadFile("static/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch {
	case len(name) > 3 && name[len(name)-3:] == ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case len(name) > 4 && name[len(name)-4:] == ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(b)
}

// badQuery is a query parameter the console refuses (400).
type badQuery struct{ error }

// fleet builds the view the request's query parameters select
// (operatorapi.ParseQuery); paged is the page's size when they name
// none (zero: every device).
func (c *Console) fleet(r *http.Request, paged int) (operatorapi.Fleet, operatorapi.Query, error) {
	q, err := operatorapi.ParseQuery(r.URL.Query())
	if err != nil {
		return operatorapi.Fleet{}, q, badQuery{err}
	}
	if q.Per == 0 {
		q.Per = paged
	}
	f, err := c.cfg.Query(r.Context(), c.clk.Now(), q)
	return f, q, err
}

// serveAPIDevices answers the devices the query selects: every one of
// them unless it names a page or its size, as for clients older than
// paging (torporctl fleet).
func (c *Console) serveAPIDevices(w http.ResponseWriter, r *http.Request) {
	f, _, err := c.fleet(r, 0)
	var bad badQuery
	switch {
	case errors.As(err, &bad):
		httpjson.Write(w, http.StatusBadRequest, map[string]string{"error": "bad_request", "message": err.Error()})
		return
	case err != nil:
		c.internal(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, f)
}

func (c *Console) serveAPIDevice(w http.ResponseWriter, r *http.Request) {
	d, err := c.cfg.One(r.Context(), r.PathValue("did"), c.clk.Now())
	if errors.Is(err, agents.ErrUnknownAgent) {
		httpjson.Write(w, http.StatusNotFound, map[string]string{"error": "unknown_agent", "message": "no device has published this agent"})
		return
	}
	if err != nil {
		c.internal(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, d)
}

func (c *Console) internal(w http.ResponseWriter, err error) {
	c.log.Error("fleet console", "err", err)
	httpjson.Write(w, http.StatusInternalServerError, map[string]string{"error": "internal_error", "message": "the relay failed"})
}
