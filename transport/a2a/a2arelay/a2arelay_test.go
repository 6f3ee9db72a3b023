package a2arelay

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The relay's answers as docs/a2a.md ("The answers") and transport/relay's
// answers.go write them; test/relay checks Transport against the real
// relay.
var answers = []struct {
	name   string
	status int
	header string
	body   string
	want   Result
}{
	{"queued, JSON-RPC", 503, "840",
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32003,"message":"asleep, try later","data":{"error":"agent_asleep","queued":true,"retryAfterSec":840}},"message":"asleep, try later","queued":true,"retryAfterSec":840}`,
		Result{Kind: Queued, Status: 503, RetryAfter: 840 * time.Second, Reason: "agent_asleep", Message: "asleep, try later"}},
	{"queued, no wake known", 503, "",
		`{"jsonrpc":"2.0","id":"a","error":{"code":-32003,"message":"asleep, try later","data":{"error":"agent_asleep","queued":true}},"message":"asleep, try later","queued":true}`,
		Result{Kind: Queued, Status: 503, Reason: "agent_asleep", Message: "asleep, try later"}},
	{"queued, profile body", 503, "60",
		`{"error":"agent_asleep","message":"asleep, try later","queued":true,"retryAfterSec":60}`,
		Result{Kind: Queued, Status: 503, RetryAfter: time.Minute, Reason: "agent_asleep", Message: "asleep, try later"}},
	{"asleep, not stored", 503, "30",
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"asleep","data":{"error":"agent_asleep","queued":false,"retryAfterSec":30}},"message":"asleep","queued":false,"retryAfterSec":30}`,
		Result{Kind: Asleep, Status: 503, RetryAfter: 30 * time.Second, Reason: "agent_asleep", Message: "asleep"}},
	{"store unavailable", 503, "5",
		`{"error":"store_unavailable","message":"the relay's store failed","queued":false}`,
		Result{Kind: Refused, Status: 503, RetryAfter: 5 * time.Second, Reason: "store_unavailable", Message: "the relay's store failed"}},
	{"store unconfirmed", 503, "5",
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"may or may not be queued","data":{"error":"store_unconfirmed","queued":false,"retryAfterSec":5}},"message":"may or may not be queued","queued":false,"retryAfterSec":5}`,
		Result{Kind: Unconfirmed, Status: 503, RetryAfter: 5 * time.Second, Reason: "store_unconfirmed", Message: "may or may not be queued"}},
	{"peer cap", 429, "",
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"asleep-inbox peer cap reached for did:key:z6Mk","data":{"error":"asleep_queue_full","kind":"peer","queued":false}},"message":"asleep-inbox peer cap reached for did:key:z6Mk","kind":"peer","queued":false}`,
		Result{Kind: Refused, Status: 429, Reason: "asleep_queue_full", Message: "asleep-inbox peer cap reached for did:key:z6Mk"}},
	{"no token", 401, "",
		`{"error":"asleep_enqueue_requires_auth","message":"DID Bearer token refused (expired): every request needs a valid token","queued":false,"tokenError":"expired"}`,
		Result{Kind: Refused, Status: 401, Reason: "asleep_enqueue_requires_auth", Message: "DID Bearer token refused (expired): every request needs a valid token"}},
	{"unanswered", 504, "",
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"the agent's device did not answer","data":{"error":"agent_unanswered","queued":false}},"message":"the agent's device did not answer","queued":false}`,
		Result{Kind: Unanswered, Status: 504, Reason: "agent_unanswered", Message: "the agent's device did not answer"}},
	{"not JSON", 502, "", `<html>bad gateway</html>`, Result{Kind: Refused, Status: 502}},
	{"delivered", 200, "", `{"jsonrpc":"2.0","id":1,"result":{}}`, Result{Kind: Delivered, Status: 200}},
}

func response(status int, retry, body string) *http.Response {
	h := http.Header{}
	if retry != "" {
		h.Set("Retry-After", retry)
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}
}

func TestRead(t *testing.T) {
	for _, tt := range answers {
		resp := response(tt.status, tt.header, tt.body)
		got, err := Read(resp)
		if err != nil || got != tt.want {
			t.Errorf("%s: Read = %+v, %v; want %+v", tt.name, got, err, tt.want)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != tt.body {
			t.Errorf("%s: body after Read = %q", tt.name, b)
		}
	}
}

type fixed struct {
	resp *http.Response
	auth string
}

func (f *fixed) RoundTrip(r *http.Request) (*http.Response, error) {
	f.auth = r.Header.Get("Authorization")
	return f.resp, nil
}

func TestTransport(t *testing.T) {
	for _, tt := range answers {
		base := &fixed{resp: response(tt.status, tt.header, tt.body)}
		c := &http.Client{Transport: &Transport{Base: base, Token: func(*http.Request) (string, error) { return "atom.x.y", nil }}}
		resp, err := c.Post("http://relay.test/a/x/a2a/jsonrpc", "application/json", strings.NewReader("{}"))
		if base.auth != "Bearer atom.x.y" {
			t.Errorf("%s: Authorization %q", tt.name, base.auth)
		}
		if tt.want.Kind == Delivered {
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("%s: %v, %v; want the 200 answer", tt.name, resp, err)
			}
			continue
		}
		// As an SDK wraps it: a2a-go v0.3.3 with %w.
		err = fmt.Errorf("failed to send HTTP request: %w", err)
		var ue *url.Error
		got, ok := As(err)
		if resp != nil || !errors.As(err, &ue) || !ok || got != tt.want {
			t.Errorf("%s: %v, As = %+v %v; want %+v", tt.name, err, got, ok, tt.want)
		}
	}
}

func TestTransportTokenError(t *testing.T) {
	boom := errors.New("no key")
	c := &http.Client{Transport: &Transport{Base: &fixed{}, Token: func(*http.Request) (string, error) { return "", boom }}}
	if _, err := c.Get("http://relay.test/"); !errors.Is(err, boom) {
		t.Errorf("Get = %v, want the Token error", err)
	}
}

func TestErrorString(t *testing.T) {
	e := &Error{answers[0].want}
	if got, want := e.Error(), "a2a relay: queued (HTTP 503, agent_asleep), retry after 14m0s: asleep, try later"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if Kind(9).String() != "Kind(9)" {
		t.Error(Kind(9).String())
	}
}

// redirect answers the first request 308 to /moved and the second with a
// queued answer, as a relay behind a redirecting proxy would.
type redirect struct{ n int }

func (r *redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	r.n++
	if req.URL.Path != "/moved" {
		resp := response(http.StatusPermanentRedirect, "", "")
		resp.Header.Set("Location", "/moved")
		return resp, nil
	}
	return response(503, "60", answers[2].body), nil
}

func TestTransportFollowsRedirects(t *testing.T) {
	base := &redirect{}
	c := &http.Client{Transport: &Transport{Base: base}}
	_, err := c.Post("http://relay.test/a/x/a2a/jsonrpc", "application/json", strings.NewReader("{}"))
	if r, ok := As(err); !ok || r.Kind != Queued || base.n != 2 {
		t.Errorf("after a 308: %v, %d requests; want the queued answer of the second", err, base.n)
	}
}
