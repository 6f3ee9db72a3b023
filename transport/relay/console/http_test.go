package console

import (
	"encoding/json"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// site is a console over a fixture on a fake clock, with one operator.
type site struct {
	*fixture
	clk    *clocktest.Clock
	srv    *httptest.Server
	origin string
	op     *did.PrivateKey
	dev    *did.PrivateKey
}

func newSite(t *testing.T, origin string) *site { return newSiteWith(t, origin, nil) }

// newSiteWith is newSite with set (if not nil) changing the console's
// configuration before the console is made.
func newSiteWith(t *testing.T, origin string, set func(*Config)) *site {
	t.Helper()
	s := &site{fixture: newFixture(t), clk: clocktest.New(t0), op: didtest.Key(t, 20), dev: didtest.Key(t, 1)}
	s.put(t, device{key: s.dev, name: "pump-1", mode: wake.Sleep, next: t0.Add(time.Hour)})
	s.srv = httptest.NewUnstartedServer(nil)
	s.origin = origin
	if s.origin == "" {
		s.origin = "http://" + s.srv.Listener.Addr().String()
	}
	cfg := Config{Source: *s.src, PublicURL: s.origin, Operators: []string{s.op.DID().String()}, Secret: make([]byte, 32), Clock: s.clk}
	if set != nil {
		set(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := http.NewServeMux()
	c.Register(m)
	s.srv.Config.Handler = m
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	return s
}

type answer struct {
	status int
	body   string
	h      http.Header
	cookie *http.Cookie
}

func (s *site) do(t *testing.T, method, path string, hdr map[string]string, cookie *http.Cookie) answer {
	t.Helper()
	req, _ := http.NewRequest(method, s.srv.URL+path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	a := answer{status: r.StatusCode, body: string(b), h: r.Header}
	if cs := r.Cookies(); len(cs) > 0 {
		a.cookie = cs[0]
	}
	return a
}

// loginToken is a login token of key for the site.
func (s *site) loginToken(t *testing.T, key *did.PrivateKey, at time.Time) string {
	t.Helper()
	tok, err := bearer.IssuePurpose(key, s.origin, bearer.PurposeFleetLogin, at, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (s *site) login(t *testing.T) *http.Cookie {
	t.Helper()
	a := s.do(t, "GET", "/fleet/login?token="+url.QueryEscape(s.loginToken(t, s.op, s.clk.Now())), nil, nil)
	if a.status != http.StatusSeeOther || a.cookie == nil || a.h.Get("Location") != "/fleet" {
		t.Fatalf("login: %d %s, cookie %v", a.status, a.body, a.cookie)
	}
	return a.cookie
}

// TestLoginAndSession: an operator's login token opens a session whose
// cookie is HttpOnly, SameSite=Strict and at most 12 hours long, and
// shows the fleet; the token works once; the session ends after 12 hours.
func TestLoginAndSession(t *testing.T) {
	s := newSite(t, "")
	c := s.login(t)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.MaxAge <= 0 || c.MaxAge > 12*3600 || c.Name != "torpor_fleet" {
		t.Errorf("session cookie %+v, want HttpOnly, SameSite=Strict, not Secure over http, at most 12 h", c)
	}
	a := s.do(t, "GET", "/fleet", nil, c)
	if a.status != 200 || !strings.Contains(a.body, "pump-1") || !strings.Contains(a.body, "1 devices") {
		t.Fatalf("fleet page: %d\n%s", a.status, a.body)
	}
	if csp := a.h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q, want a strict one", csp)
	}
	if a := s.do(t, "GET", "/fleet/rows?state=asleep", nil, c); a.status != 200 || !strings.Contains(a.body, "pump-1") || strings.Contains(a.body, "<html") {
		t.Errorf("rows: %d %s", a.status, a.body)
	}
	if a := s.do(t, "GET", "/fleet/device/"+s.dev.DID().String(), nil, c); a.status != 200 || !strings.Contains(a.body, s.dev.DID().String()) {
		t.Errorf("device page: %d", a.status)
	}
	s.clk.Advance(12 * time.Hour)
	if a := s.do(t, "GET", "/fleet", nil, c); a.status != http.StatusUnauthorized || !strings.Contains(a.body, "session expired") {
		t.Errorf("after 12 h: %d %s, want the login page saying the session expired", a.status, a.body)
	}
}

// TestLoginRefused: a replayed, expired, non-operator's or API token, and
// a tampered cookie, get the login page saying why.
func TestLoginRefused(t *testing.T) {
	s := newSite(t, "")
	tok := s.loginToken(t, s.op, t0)
	if a := s.do(t, "GET", "/fleet/login?token="+url.QueryEscape(tok), nil, nil); a.status != http.StatusSeeOther {
		t.Fatalf("first use: %d %s", a.status, a.body)
	}
	api, _ := bearer.IssuePurpose(s.op, s.origin, bearer.PurposeFleet, t0, time.Minute)
	for name, c := range map[string]struct{ tok, want string }{
		"replayed":       {tok, "used already"},
		"non-operator":   {s.loginToken(t, didtest.Key(t, 21), t0), "not an operator"},
		"expired":        {s.loginToken(t, s.op, t0.Add(-10*time.Minute)), "expired"},
		"an API token":   {api, "purpose"},
		"another origin": {mustIssue(t, s.op, "https://elsewhere.example"), "audience"},
	} {
		a := s.do(t, "GET", "/fleet/login?token="+url.QueryEscape(c.tok), nil, nil)
		if a.status != http.StatusForbidden || a.cookie != nil || !strings.Contains(a.body, "torporctl fleet open") || !strings.Contains(a.body, c.want) {
			t.Errorf("%s login token: %d, cookie %v\n%s\nwant 403, the login page saying %q", name, a.status, a.cookie, a.body, c.want)
		}
	}
	c := s.login(t)
	tampered := *c
	tampered.Value = strings.Replace(c.Value, s.op.DID().String(), didtest.Key(t, 21).DID().String(), 1)
	if a := s.do(t, "GET", "/fleet", nil, &tampered); a.status != http.StatusUnauthorized || !strings.Contains(a.body, "not one this relay signed") {
		t.Errorf("tampered cookie: %d %s", a.status, a.body)
	}
	if a := s.do(t, "GET", "/fleet", nil, nil); a.status != http.StatusUnauthorized || !strings.Contains(a.body, "torporctl fleet open") || strings.Contains(a.body, "pump-1") {
		t.Errorf("no cookie: %d %s", a.status, a.body)
	}
}

func mustIssue(t *testing.T, key *did.PrivateKey, aud string) string {
	tok, err := bearer.IssuePurpose(key, aud, bearer.PurposeFleetLogin, t0, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestLogoutChecksOrigin: logout without the console's Origin is refused;
// with it, the cookie is cleared.
func TestLogoutChecksOrigin(t *testing.T) {
	s := newSite(t, "")
	c := s.login(t)
	for _, o := range []string{"", "https://evil.example"} {
		if a := s.do(t, "POST", "/fleet/logout", map[string]string{"Origin": o}, c); a.status != http.StatusForbidden || a.cookie != nil {
			t.Errorf("logout with Origin %q: %d, cookie %v; want 403", o, a.status, a.cookie)
		}
	}
	a := s.do(t, "POST", "/fleet/logout", map[string]string{"Origin": s.origin}, c)
	if a.status != http.StatusSeeOther || a.cookie == nil || a.cookie.MaxAge >= 0 {
		t.Errorf("logout: %d, cookie %+v; want the cookie cleared", a.status, a.cookie)
	}
}

// TestAPI: the JSON API answers an operator's session or API token, and
// refuses anyone else.
func TestAPI(t *testing.T) {
	s := newSite(t, "")
	tok, _ := bearer.IssuePurpose(s.op, s.origin, bearer.PurposeFleet, t0, time.Minute)
	other, _ := bearer.IssuePurpose(didtest.Key(t, 21), s.origin, bearer.PurposeFleet, t0, time.Minute)
	a := s.do(t, "GET", "/fleet/api/devices", map[string]string{"Authorization": "Bearer " + tok}, nil)
	var f operatorapi.Fleet
	if err := json.Unmarshal([]byte(a.body), &f); a.status != 200 || err != nil || len(f.Devices) != 1 || f.Devices[0].State != operatorapi.StateAsleep {
		t.Fatalf("API with an operator token: %d %s", a.status, a.body)
	}
	a = s.do(t, "GET", "/fleet/api/devices/"+s.dev.DID().String(), nil, s.login(t))
	var d operatorapi.Device
	if err := json.Unmarshal([]byte(a.body), &d); a.status != 200 || err != nil || d.Detail == nil || d.Name != "pump-1" {
		t.Fatalf("API device with a session: %d %s", a.status, a.body)
	}
	if a := s.do(t, "GET", "/fleet/api/devices/"+didtest.Key(t, 9).DID().String(), map[string]string{"Authorization": "Bearer " + tok}, nil); a.status != 404 {
		t.Errorf("unknown device: %d", a.status)
	}
	for name, h := range map[string]map[string]string{"none": nil, "non-operator": {"Authorization": "Bearer " + other}} {
		if a := s.do(t, "GET", "/fleet/api/devices", h, nil); a.status != http.StatusUnauthorized || strings.Contains(a.body, "pump-1") {
			t.Errorf("API with %s: %d %s", name, a.status, a.body)
		}
	}
	if a := s.do(t, "GET", "/fleet/api/devices?state=sideways", map[string]string{"Authorization": "Bearer " + tok}, nil); a.status != 400 {
		t.Errorf("unknown state: %d", a.status)
	}
}

// TestSecureCookieOverHTTPS: an https origin gets a __Host- Secure cookie.
func TestSecureCookieOverHTTPS(t *testing.T) {
	s := newSite(t, "https://relay.example")
	c := s.login(t)
	if !c.Secure || c.Name != "__Host-torpor_fleet" || c.Path != "/" {
		t.Errorf("cookie %+v, want __Host-torpor_fleet, Secure, Path=/", c)
	}
}

// TestDeviceTextIsEscaped: what a device publishes (its card's name, its
// held actions' keys) is text on the pages, never markup.
func TestDeviceTextIsEscaped(t *testing.T) {
	s := newSite(t, "")
	evil := didtest.Key(t, 2)
	s.put(t, device{key: evil, name: `<script>alert(1)</script>`, mode: wake.Sleep,
		status: &wire.Status{Version: "1", HeldCount: 1, Held: []wire.StatusHeld{{Key: `x' ; rm -rf / ; '<b>`, Purpose: "action:x"}}}})
	c := s.login(t)
	for _, path := range []string{"/fleet", "/fleet/device/" + evil.DID().String()} {
		a := s.do(t, "GET", path, nil, c)
		if a.status != 200 || strings.Contains(a.body, "<script>alert") || strings.Contains(a.body, "<b>") || !strings.Contains(a.body, "&lt;script&gt;alert(1)") {
			t.Errorf("%s: %d; the device's text is not escaped:\n%s", path, a.status, a.body)
		}
	}
	a := s.do(t, "GET", "/fleet/device/"+evil.DID().String(), nil, c)
	if want := `&#39;x&#39;\&#39;&#39; ; rm -rf / ; &#39;\&#39;&#39;&lt;b&gt;&#39;`; !strings.Contains(a.body, want) {
		t.Errorf("the confirm command does not quote the key for the shell (want %s):\n%s", want, a.body)
	}
}

// TestDeviceTextNeutralised: a name, board or held action stored with a
// bidirectional override, an isolate or a zero-width character (from a
// store an older relay wrote: a relay refuses them now) is shown in both
// pages with the character's code point in visible text, never the
// character itself.
func TestDeviceTextNeutralised(t *testing.T) {
	s := newSite(t, "")
	evil := didtest.Key(t, 2)
	s.put(t, device{key: evil, name: "pump\u202E1-tsae", mode: wake.Sleep,
		status: &wire.Status{Version: "1\u200B", Board: "pi\u2066", HeldCount: 1, Held: []wire.StatusHeld{{Key: "k", Purpose: "action:x", Reason: "r\uFEFF"}}}})
	c := s.login(t)
	for _, path := range []string{"/fleet", "/fleet/device/" + evil.DID().String()} {
		a := s.do(t, "GET", path, nil, c)
		for _, r := range []string{"\u202E", "\u200B", "\u2066", "\uFEFF"} {
			if strings.Contains(a.body, r) {
				t.Errorf("%s shows %U itself", path, []rune(r)[0])
			}
		}
		if a.status != 200 || !strings.Contains(a.body, "pump&lt;U+202E&gt;1-tsae") {
			t.Errorf("%s: %d; the name is not shown neutralised:\n%s", path, a.status, a.body)
		}
	}
}

// TestAwaitingAdmission: a device on probation is flagged in the API and
// counted in its summary; the fleet page says so, and its page gives the
// command that admits it. An admitted device says nothing of it.
func TestAwaitingAdmission(t *testing.T) {
	s := newSite(t, "")
	fresh := didtest.Key(t, 2)
	s.put(t, device{key: fresh, name: "new-pump", mode: wake.Sleep, next: t0.Add(time.Hour)})
	s.awaiting[fresh.DID().String()] = true
	tok, _ := bearer.IssuePurpose(s.op, s.origin, bearer.PurposeFleet, t0, time.Minute)
	a := s.do(t, "GET", "/fleet/api/devices", map[string]string{"Authorization": "Bearer " + tok}, nil)
	var f operatorapi.Fleet
	if err := json.Unmarshal([]byte(a.body), &f); err != nil || f.Summary.AwaitingAdmission != 1 {
		t.Fatalf("API: %v %s", err, a.body)
	}
	for _, d := range f.Devices {
		if d.AwaitingAdmission != (d.Name == "new-pump") {
			t.Errorf("%s: awaitingAdmission %v", d.Name, d.AwaitingAdmission)
		}
	}
	c := s.login(t)
	if a := s.do(t, "GET", "/fleet", nil, c); !strings.Contains(a.body, "1 awaiting admission") || strings.Count(a.body, ">awaiting admission</span>") != 1 {
		t.Errorf("fleet page: %d, want the device and the summary flagged:\n%s", a.status, a.body)
	}
	if a := s.do(t, "GET", "/fleet/device/"+fresh.DID().String(), nil, c); !strings.Contains(a.body, `data-copy="torporctl device admit `+fresh.DID().String()+`"`) {
		t.Errorf("device page: %d, want the admit command:\n%s", a.status, a.body)
	}
	if a := s.do(t, "GET", "/fleet/device/"+s.dev.DID().String(), nil, c); strings.Contains(a.body, "awaiting admission") {
		t.Errorf("an admitted device's page says awaiting admission")
	}
}

// TestCopiedCommandNamesTheDID: the confirm and deny commands the device
// page offers name the device by its DID, which torporctl resolves to the
// device's MQTT name; the card's name (here "plot7" for the MQTT name
// plot-7) would make the command wait for a device that never gets it.
func TestCopiedCommandNamesTheDID(t *testing.T) {
	s := newSite(t, "")
	k := didtest.Key(t, 3)
	s.put(t, device{key: k, name: "plot7", mode: wake.Sleep,
		status: &wire.Status{Version: "1", HeldCount: 1, Held: []wire.StatusHeld{{Key: "k-1", Purpose: "action:x"}}}})
	a := s.do(t, "GET", "/fleet/device/"+k.DID().String(), nil, s.login(t))
	for _, op := range []string{"confirm", "deny"} {
		want := "torporctl device " + op + " " + k.DID().String() + " &#39;k-1&#39;"
		if a.status != 200 || strings.Count(a.body, want) != 2 {
			t.Errorf("the page does not offer (and copy) %q:\n%s", want, a.body)
		}
	}
	if strings.Contains(a.body, "device confirm --did") || strings.Contains(a.body, "plot7 &#39;k-1") {
		t.Errorf("the copied command names the card's name:\n%s", a.body)
	}
}
