// Package a2arelay turns a Torpor relay's answers to an A2A client into
// typed results, for Go programs that talk to Torpor devices with an A2A
// SDK such as github.com/a2aproject/a2a-go.
//
// An SDK reads an HTTP 200 answer, a JSON-RPC result or error, and reports
// any other status as a bare error ("unexpected HTTP status: 503" in
// a2a-go v0.3.3) without reading the body. A relay answers a message to a
// sleeping device 503 with Retry-After once it has stored it, and refuses
// others with 401, 413, 429 or 507 and the reason in the body
// (docs/a2a.md, "The answers"). Transport, an http.RoundTripper given to
// the SDK's http.Client, reads those answers (any status of 400 or more)
// and returns them as an *Error, which the SDK wraps, so that the caller gets them back with
// errors.As; Read classifies one *http.Response for callers without an
// SDK.
//
// Its name keeps it apart from a2a-go's a2aclient, which a caller imports
// next to it. The package uses net/http: the device (torpor-agent) never
// links it.
package a2arelay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Kind is what became of one request to an agent behind a relay.
type Kind int

// The kinds of Result.
const (
	// Delivered: HTTP 200, the JSON-RPC answer of the agent (or, for a
	// request the agent never takes, of the relay on its behalf), which
	// the SDK reads.
	Delivered Kind = iota
	// Queued: the device sleeps and the relay stored the message (503,
	// data.queued true). Do not send it again; the device takes it when
	// it wakes, in about RetryAfter.
	Queued
	// Asleep: the device sleeps and the message was not stored (503,
	// queued false: an agent in session mode). Send it again after
	// RetryAfter, if given.
	Asleep
	// Refused: the relay refused the request and stored nothing: no valid
	// token (401), too large (413), the agent's queue full (429, 507),
	// the relay's store unavailable (503 store_unavailable), no such agent
	// (404). Reason says which.
	Refused
	// Unanswered: the device was awake but did not answer in time (504);
	// the request may or may not have been processed.
	Unanswered
	// Unconfirmed: the relay's store took the message but did not
	// confirm it (503 store_unconfirmed); it may or may not be queued.
	// Sending it again may deliver it twice: the device drops a second
	// copy of a Governed Object it has seen.
	Unconfirmed
)

var kindNames = [...]string{"delivered", "queued", "asleep", "refused", "unanswered", "unconfirmed"}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "Kind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindNames[k]
}

// Result is a relay's answer to one request.
type Result struct {
	Kind Kind
	// Status is the HTTP status code.
	Status int
	// RetryAfter is when to expect the device or to try again: the
	// Retry-After header's delay-seconds (RFC 9110, Section 10.2.3), else
	// the body's retryAfterSec; 0 when the relay did not say.
	RetryAfter time.Duration
	// Reason is the relay's error token (agent_asleep, asleep_queue_full,
	// asleep_enqueue_requires_auth, message_too_large, store_unavailable,
	// agent_unanswered, unknown_agent, ...); empty for Delivered.
	Reason string
	// Message is the relay's message, and for a refused token why it was
	// refused.
	Message string
}

// Error is a Result other than Delivered, as Transport returns it.
type Error struct{ Result }

func (e *Error) Error() string {
	s := fmt.Sprintf("a2a relay: %s (HTTP %d", e.Kind, e.Status)
	if e.Reason != "" {
		s += ", " + e.Reason
	}
	s += ")"
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(", retry after %s", e.RetryAfter)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// maxBody bounds how much of a non-200 answer Read reads; the relay's are
// a few hundred bytes.
const maxBody = 64 << 10

// body is what Read reads of a relay's answer: the offline profile's
// members, at the top level and, in a JSON-RPC error response, in
// error.data. error is a string in the first and an object in the second.
type body struct {
	Error         json.RawMessage `json:"error"`
	Message       string          `json:"message"`
	Queued        bool            `json:"queued"`
	RetryAfterSec int             `json:"retryAfterSec"`
	TokenError    string          `json:"tokenError"`
}

type rpcError struct {
	Message string `json:"message"`
	Data    struct {
		Error         string `json:"error"`
		Queued        bool   `json:"queued"`
		RetryAfterSec int    `json:"retryAfterSec"`
	} `json:"data"`
}

// Read classifies resp, a relay's answer to a request for an agent. For a
// status other than 200 it reads the body (up to 64 KiB) and puts an equal
// reader back in resp.Body, so that the caller may still read it. A body
// that is not the relay's JSON leaves Reason and Message empty; the error
// is only a failure to read the body.
func Read(resp *http.Response) (Result, error) {
	r := Result{Status: resp.StatusCode}
	if resp.StatusCode == http.StatusOK {
		return r, nil
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	if err != nil {
		return r, fmt.Errorf("a2arelay: reading the relay's answer: %w", err)
	}
	var b body
	json.Unmarshal(raw, &b) // a body that is not JSON leaves b empty
	r.Message, r.Reason = b.Message, ""
	queued, retry := b.Queued, b.RetryAfterSec
	var e rpcError
	if err := json.Unmarshal(b.Error, &r.Reason); err != nil && json.Unmarshal(b.Error, &e) == nil {
		r.Reason, queued = e.Data.Error, queued || e.Data.Queued
		r.Message = firstNonEmpty(r.Message, e.Message)
		if retry == 0 {
			retry = e.Data.RetryAfterSec
		}
	}
	if b.TokenError != "" && !strings.Contains(r.Message, b.TokenError) {
		r.Message = firstNonEmpty(r.Message+" ("+b.TokenError+")", b.TokenError)
	}
	r.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), retry)
	r.Kind = kindOf(resp.StatusCode, r.Reason, queued)
	return r, nil
}

func kindOf(status int, reason string, queued bool) Kind {
	switch {
	case status == http.StatusServiceUnavailable && queued:
		return Queued
	case status == http.StatusServiceUnavailable && reason == "agent_asleep":
		return Asleep
	case status == http.StatusGatewayTimeout:
		return Unanswered
	case status == http.StatusServiceUnavailable && reason == "store_unconfirmed":
		return Unconfirmed
	}
	return Refused
}

// retryAfter reads header as delay-seconds (RFC 9110, Section 10.2.3; the
// relay sends no HTTP-date), else sec.
func retryAfter(header string, sec int) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(header)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if sec > 0 {
		return time.Duration(sec) * time.Second
	}
	return 0
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
