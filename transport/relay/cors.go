package relay

import (
	"net/http"
	"slices"
	"strings"
)

// Cross-origin access (CORS, https://fetch.spec.whatwg.org/#http-cors-protocol)
// for A2A clients running in a browser. The card and the pulse are public
// and signed, so any origin may read them by default; the JSON-RPC
// endpoint takes requests only from the origins the operator lists
// (Config.HTTP.CORSOrigins, --cors-origin).

// corsHeaders are the request headers A2A clients send: the DID Bearer
// token, the JSON body's type, and the A2A version and extension headers
// (@a2a-js/sdk sends A2A-Version and A2A-Extensions, and X-A2A-Extensions
// with its v0.3 transport).
const corsHeaders = "Authorization, Content-Type, A2A-Version, A2A-Extensions, X-A2A-Extensions"

// corsExpose are the response headers a browser client may read besides the
// safelisted ones: when to retry, and why a token was refused.
const corsExpose = "Retry-After, WWW-Authenticate"

// corsMaxAge is how long, in seconds, a browser may cache a preflight.
const corsMaxAge = "600"

// cors is the policy of one group of routes.
type cors struct {
	origins []string // allowed origins; "*" allows any
	methods string   // the routes' methods, for preflights
}

// allow returns the Access-Control-Allow-Origin value for origin, or "".
func (c cors) allow(origin string) string {
	switch {
	case origin == "":
		return ""
	case slices.Contains(c.origins, "*"):
		return "*"
	case slices.Contains(c.origins, origin):
		return origin
	}
	return ""
}

// wrap adds the CORS response headers to h's answers.
func (c cors) wrap(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		addVaryOrigin(w.Header())
		if o := c.allow(r.Header.Get("Origin")); o != "" {
			w.Header().Set("Access-Control-Allow-Origin", o)
			w.Header().Set("Access-Control-Expose-Headers", corsExpose)
		}
		h(w, r)
	}
}

// originVary is the Vary value of every answer, shared by them: its
// length is its capacity, so that an Add of another value appends to a
// copy.
var originVary = []string{"Origin"}

// addVaryOrigin is h.Add("Vary", "Origin") without allocating when h has
// no Vary yet.
func addVaryOrigin(h http.Header) {
	if _, ok := h["Vary"]; ok {
		h.Add("Vary", "Origin")
		return
	}
	h["Vary"] = originVary
}

// preflight answers an OPTIONS request: 204, and for an allowed origin the
// methods and headers it may use. A refused origin gets no CORS headers,
// which the browser reads as a refusal.
func (c cors) preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Add("Vary", "Origin")
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	h.Set("Allow", c.methods)
	if o := c.allow(r.Header.Get("Origin")); o != "" {
		h.Set("Access-Control-Allow-Origin", o)
		h.Set("Access-Control-Allow-Methods", c.methods)
		h.Set("Access-Control-Allow-Headers", corsHeaders)
		h.Set("Access-Control-Max-Age", corsMaxAge)
	}
	w.WriteHeader(http.StatusNoContent)
}

// cleanOrigins drops empty entries and trailing slashes: an origin is
// scheme://host[:port], which is what browsers send.
func cleanOrigins(in []string) []string {
	var out []string
	for _, o := range in {
		if o = strings.TrimRight(strings.TrimSpace(o), "/"); o != "" {
			out = append(out, o)
		}
	}
	return out
}
