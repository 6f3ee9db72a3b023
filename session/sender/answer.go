package sender

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/did"
)

// Answer is what one attempt to send got from a relay, or from the live
// agent behind it (docs/a2a.md gives the offline profile's answers).
type Answer struct {
	Status int `json:"status"`
	// Error is the profile's token: agent_asleep, asleep_queue_full,
	// agent_retired, ...; "rejected" when a live agent refused the object.
	Error   string `json:"error,omitempty"`
	Message string `json:"message,omitempty"`
	// Kind is the bound a full queue hit: messages, bytes or peer.
	Kind string `json:"kind,omitempty"`
	// Queued is true when the relay stored the message for the sleeping
	// agent.
	Queued bool `json:"queued"`
	// RetryAfter is when to come back, in seconds on the relay's clock,
	// zero for no hint.
	RetryAfter int `json:"retryAfterSec,omitempty"`
	// RPCCode is the JSON-RPC error code of a live agent's refusal (a 200
	// whose body is a JSON-RPC error); zero otherwise.
	RPCCode int `json:"rpcCode,omitempty"`
	// Challenge is the error_description of the relay's WWW-Authenticate
	// header: why it refused the DID Bearer token.
	Challenge string `json:"challenge,omitempty"`
	// Successor is the DID that replaced a retired agent (410
	// agent_retired): send to it instead.
	Successor string `json:"successor,omitempty"`
	// Body is the answer's body (at most 2 KiB) when it was not a plain
	// success.
	Body string `json:"body,omitempty"`
}

// maxAnswerBody bounds Answer.Body.
const maxAnswerBody = 2048

// ReadAnswer reads a relay's answer in either of the offline profile's
// shapes: its body ({"error":"agent_asleep","queued":...,"retryAfterSec":...})
// or the JSON-RPC mapping (error.data carries them), which Torpor's relay
// combines with the top-level members. A Retry-After header (RFC 9110,
// Section 10.2.3, delay-seconds only) wins over the body's retryAfterSec. h
// may be nil.
func ReadAnswer(status int, h http.Header, body []byte) Answer {
	a := Answer{Status: status, Challenge: challenge(h.Get("WWW-Authenticate"))}
	var top struct {
		Error         json.RawMessage `json:"error"`
		Message       string          `json:"message"`
		Kind          string          `json:"kind"`
		Queued        bool            `json:"queued"`
		RetryAfterSec int             `json:"retryAfterSec"`
		Successor     string          `json:"successor"`
	}
	if json.Unmarshal(body, &top) == nil {
		a.Message, a.Kind, a.Queued, a.RetryAfter = top.Message, top.Kind, top.Queued, top.RetryAfterSec
		a.Successor = top.Successor
		a.readError(top.Error)
	}
	if n, err := strconv.Atoi(h.Get("Retry-After")); err == nil && n > 0 {
		a.RetryAfter = n
	}
	if status != http.StatusOK || a.Error == "" {
		a.Body = string(bytes.TrimSpace(body[:min(len(body), maxAnswerBody)]))
	}
	return a
}

// readError reads the error member: the profile's token, or a JSON-RPC
// error whose data carries the profile's members.
func (a *Answer) readError(raw json.RawMessage) {
	var tok string
	var rpc struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Error         string `json:"error"`
			Kind          string `json:"kind"`
			Queued        bool   `json:"queued"`
			RetryAfterSec int    `json:"retryAfterSec"`
		} `json:"data"`
	}
	switch {
	case json.Unmarshal(raw, &tok) == nil:
		a.Error = tok
	case json.Unmarshal(raw, &rpc) == nil:
		a.Error = rpc.Data.Error
		if a.Status == http.StatusOK && rpc.Code != 0 {
			a.Error, a.RPCCode = "rejected", rpc.Code
		}
		a.Queued = a.Queued || rpc.Data.Queued
		a.Kind = cmpOr(a.Kind, rpc.Data.Kind)
		a.Message = cmpOr(a.Message, rpc.Message)
		if a.RetryAfter == 0 {
			a.RetryAfter = rpc.Data.RetryAfterSec
		}
	}
}

// challenge returns the error_description of a Bearer challenge
// (RFC 6750, Section 3), or "".
func challenge(h string) string {
	const key = `error_description="`
	i := strings.Index(h, key)
	if i < 0 {
		return ""
	}
	d := h[i+len(key):]
	if j := strings.IndexByte(d, '"'); j >= 0 {
		d = d[:j]
	}
	return d
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Rejected reports whether a live agent answered and refused the object.
func (a Answer) Rejected() bool { return a.Status == http.StatusOK && a.RPCCode != 0 }

// Retryable reports whether an answer that stored nothing may be tried
// again later: a refusal that queued nothing (503 queued false, 507 or
// 429 asleep_queue_full). A 504 agent_unanswered is not: the agent may
// have processed the message.
func (a Answer) Retryable() bool {
	switch a.Status {
	case http.StatusServiceUnavailable, http.StatusInsufficientStorage, http.StatusTooManyRequests:
		return !a.Queued
	}
	return false
}

// Unconfirmed reports whether the relay's store took the message but did
// not confirm it (503 store_unconfirmed): it may or may not be queued.
func (a Answer) Unconfirmed() bool {
	return a.Status == http.StatusServiceUnavailable && !a.Queued && a.Error == "store_unconfirmed"
}

// String says what the answer means, for people.
func (a Answer) String() string {
	switch {
	case a.Rejected():
		// The relay answers for a sleeping agent exactly as the agent would
		// (test/hostile's TestRealAgentAnswersAlike: an answer must not say
		// whether the agent is awake), so this cannot name which refused.
		return fmt.Sprintf("rejected: the agent refused it, or the relay refused it for the agent by its signed policy (an unencrypted object where the policy takes none); nothing was queued: %d %s", a.RPCCode, a.Message)
	case a.Status == http.StatusOK:
		return "delivered: the agent was awake and took it"
	case a.Unconfirmed():
		return "unconfirmed: the relay's store did not confirm the write; the message may or may not be queued (the device drops a second copy, so sending it again is safe)"
	case a.Status == http.StatusServiceUnavailable:
		return a.asleep()
	case a.Error == "agent_retired" && a.Successor != "":
		return "refused: the agent's key was rotated; it is now " + a.Successor + ": send to that DID (nothing was queued)"
	case a.Error == "asleep_queue_full":
		return fmt.Sprintf("refused: the agent's queue is full (%s bound: %s); nothing was queued", a.Kind, a.Message)
	case a.Status == http.StatusGatewayTimeout:
		return "unanswered: the agent's device did not answer; it may or may not have processed the message (not retried)"
	case a.Status == http.StatusUnauthorized && a.Challenge != "":
		return "refused: the relay did not accept your DID Bearer token: " + a.Challenge
	case a.Status == http.StatusUnauthorized:
		return "refused: the relay did not accept your DID Bearer token: " + a.Body
	case a.Status == http.StatusNotFound:
		return "refused: the relay does not know this agent: " + a.Body
	case a.Status == http.StatusRequestEntityTooLarge:
		return "refused: the message exceeds the agent's maximum message size: " + a.Body
	}
	return fmt.Sprintf("refused: HTTP %d: %s", a.Status, a.Body)
}

// asleep describes a 503: queued for the sleeping agent, or refused.
func (a Answer) asleep() string {
	if a.Queued {
		s := "queued: the agent is asleep; the relay stored the message and delivers it when the agent wakes"
		if a.RetryAfter > 0 {
			s += fmt.Sprintf(" (expected in about %s)", (time.Duration(a.RetryAfter) * time.Second).String())
		}
		return s + "; it will not be sent again"
	}
	s := "refused: the agent is not accepting this now and nothing was queued"
	if a.RetryAfter > 0 {
		s += fmt.Sprintf("; try again in %ds", a.RetryAfter)
	}
	return s
}

// KeyPackageError says why the relay gave no KeyPackage for agent (he is
// the failed key-package request): it knows no such agent (404
// unknown_agent: a typo in the DID, or a device that never linked), the
// agent was retired by a key rotation (410 agent_retired, with its
// successor), its pool is used up (503 no_key_package), or something
// else, in the relay's words.
func KeyPackageError(agent did.DID, he *HTTPError) error {
	a := ReadAnswer(he.Status, he.Header, he.Body)
	switch {
	case a.Error == "agent_retired" && a.Successor != "":
		return fmt.Errorf("%s was retired when its key was rotated; it is now %s: send to that DID", agent, a.Successor)
	case a.Error == "unknown_agent":
		return fmt.Errorf("no such agent on this relay: no device has published %s there (check the DID and the relay)", agent)
	case a.Error == "no_key_package":
		s := fmt.Sprintf("%s has no MLS KeyPackage left on the relay (used up, or none published yet); its device publishes new ones when it next links", agent)
		if a.RetryAfter > 0 {
			s += fmt.Sprintf(" (expected in about %s)", time.Duration(a.RetryAfter)*time.Second)
		}
		return errors.New(s + "; a plaintext send works where the agent allows it")
	}
	return fmt.Errorf("no MLS KeyPackage for %s from the relay: %s", agent, a)
}
