package a2arelay

import (
	"errors"
	"net/http"
)

// Transport is an http.RoundTripper for an A2A SDK's http.Client that adds
// the DID Bearer token to each request and returns every error answer (a
// status of 400 or more) as an *Error carrying its Result (Read), closing
// its body; other answers, redirects among them (which http.Client then
// follows), pass unchanged. The SDK wraps
// that error (http.Client in a *url.Error, a2a-go v0.3.3 with %w), so
// errors.As, or As, finds it in the error the SDK returns.
type Transport struct {
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
	// Token returns the DID Bearer token for req (docs/a2a.md, "The DID
	// Bearer token"; transport/bearer.Issue), whose audience is req's
	// origin. Nil sends the requests' own Authorization header.
	Token func(req *http.Request) (string, error)
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.Token != nil {
		tok, err := t.Token(req)
		if err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil || resp.StatusCode < http.StatusBadRequest {
		return resp, err
	}
	r, err := Read(resp)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	return nil, &Error{Result: r}
}

// As returns the Result in err's chain, if Transport put one there.
func As(err error) (Result, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Result, true
	}
	return Result{}, false
}
