// Package bearerhttp is the HTTP side of package bearer: the 401 answer in
// the reference's form (WriteUnauthorized) and a middleware that requires a
// valid token (Middleware). It lives apart from package bearer so that
// torpor-agent, which issues tokens but serves no HTTP, does not link
// net/http (internal/deptest).
package bearerhttp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// unauthorizedBody is the reference's 401 body.
type unauthorizedBody struct {
	Error  string `json:"error"`
	Detail string `json:"detail"`
}

// WriteUnauthorized answers 401 in the reference's exact form:
//
//	WWW-Authenticate: Bearer realm="atom", error="invalid_token", error_description="<detail>"
//	{"error":"unauthorized","detail":"<detail>"}
//
// detail is the Detail of err when err is a *bearer.Error, else "invalid token".
// Double quotes are removed from the detail inside the header, as the
// reference does, so the header stays well-formed.
func WriteUnauthorized(w http.ResponseWriter, err error) {
	detail := "invalid token"
	var e *bearer.Error
	if errors.As(err, &e) {
		detail = e.Detail
	}
	h := w.Header()
	h.Set("WWW-Authenticate", `Bearer realm="atom", error="invalid_token", error_description="`+strings.ReplaceAll(detail, `"`, "")+`"`)
	h.Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	b, _ := json.Marshal(unauthorizedBody{Error: "unauthorized", Detail: detail})
	w.Write(b)
}

type callerKey struct{}

// WithCaller returns a copy of ctx carrying the verified caller DID.
func WithCaller(ctx context.Context, id did.DID) context.Context {
	return context.WithValue(ctx, callerKey{}, id)
}

// Caller returns the DID that Middleware verified for the request whose
// context is ctx, and whether there is one.
func Caller(ctx context.Context) (did.DID, bool) {
	id, ok := ctx.Value(callerKey{}).(did.DID)
	return id, ok && !id.IsZero()
}

// Middleware requires a valid token on every request: it answers 401 with
// WriteUnauthorized when the Authorization header is missing or fails
// v.Verify, and otherwise calls next with the caller's DID in the request
// context (read it with Caller). That DID is the only identity per-peer
// accounting may key on.
func Middleware(v *bearer.Verifier, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := v.Verify(r.Header.Get("Authorization"))
		if err != nil {
			WriteUnauthorized(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithCaller(r.Context(), id)))
	})
}
