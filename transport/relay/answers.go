package relay

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/torpor-dev/torpor/internal/httpjson"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// The profile's tokens and the JSON-RPC code of the asleep signal.
const (
	tokenAsleep       = "agent_asleep"
	tokenQueueFull    = "asleep_queue_full"
	tokenRequiresAuth = "asleep_enqueue_requires_auth"
	tokenTooLarge     = "message_too_large"
	tokenUnanswered   = "agent_unanswered"
	// tokenStoreUnavailable is Torpor's own: the store failed (a
	// JetStream stream without quorum, a full disk) and nothing was
	// stored.
	tokenStoreUnavailable = "store_unavailable"
	// tokenStoreUnconfirmed is Torpor's own: the store took the write
	// but did not confirm it (queue.ErrUnconfirmed); the message may or
	// may not be queued.
	tokenStoreUnconfirmed = "store_unconfirmed"

	// CodeAsleep is the JSON-RPC error code of the asleep signal (offline
	// profile, JSON-RPC mapping). Note that A2A (v0.3 and v1.0) uses
	// -32003 for PushNotificationNotSupportedError, so a generic A2A client
	// reports the asleep answer under that name (see docs/relay.md).
	CodeAsleep = -32003
	// CodeServerError is the JSON-RPC code of a relay that could not
	// serve the request (JSON-RPC 2.0, Section 5.1: -32000 to -32099 are
	// server errors), such as store_unavailable.
	CodeServerError = -32000
)

// profileAnswer is the offline profile's body, members in the reference's
// order.
type profileAnswer struct {
	Error         string `json:"error"`
	Message       string `json:"message"`
	Kind          string `json:"kind,omitempty"`
	Queued        bool   `json:"queued"`
	RetryAfterSec *int   `json:"retryAfterSec,omitempty"`
}

// rpcAnswer is a JSON-RPC 2.0 error response (JSON-RPC 2.0, Section 5) that
// also carries the profile's members that do not collide with it.
type rpcAnswer struct {
	JSONRPC       string          `json:"jsonrpc"`
	ID            json.RawMessage `json:"id"`
	Error         rpcError        `json:"error"`
	Message       string          `json:"message"`
	Kind          string          `json:"kind,omitempty"`
	Queued        bool            `json:"queued"`
	RetryAfterSec *int            `json:"retryAfterSec,omitempty"`
}

type rpcError struct {
	Code    int     `json:"code"`
	Message string  `json:"message"`
	Data    rpcData `json:"data"`
}

type rpcData struct {
	Error         string `json:"error"`
	Kind          string `json:"kind,omitempty"`
	Queued        bool   `json:"queued"`
	RetryAfterSec *int   `json:"retryAfterSec,omitempty"`
}

// answer writes a refusal or the asleep signal. Both shapes carry the same
// facts; which one depends on the request (see the package doc, "The
// asleep answer"): a JSON-RPC call (a request with an id) gets a JSON-RPC
// error response with code and data.error, anything else the profile's
// body. retry > 0 also sets Retry-After.
func answer(w http.ResponseWriter, req rpcRequest, status, code int, p profileAnswer, retry int) {
	if retry > 0 {
		p.RetryAfterSec = &retry
		w.Header().Set("Retry-After", strconv.Itoa(retry))
	}
	if !req.call {
		httpjson.Write(w, status, p)
		return
	}
	httpjson.Write(w, status, rpcAnswer{
		JSONRPC: "2.0", ID: req.id,
		Error:   rpcError{Code: code, Message: p.Message, Data: rpcData{Error: p.Error, Kind: p.Kind, Queued: p.Queued, RetryAfterSec: p.RetryAfterSec}},
		Message: p.Message, Kind: p.Kind, Queued: p.Queued, RetryAfterSec: p.RetryAfterSec,
	})
}

// answerFull is the queue-full answer: 507 for the messages and bytes
// bounds, 429 for the per-peer bound, never agent_asleep. The draft
// defines no JSON-RPC code for it; a JSON-RPC call gets CodeQueueFull.
func answerFull(w http.ResponseWriter, req rpcRequest, fe *queue.FullError, b queuebounds.Bounds, caller string) {
	status, msg := http.StatusInsufficientStorage, ""
	switch fe.Kind {
	case queue.BoundMessages:
		msg = fmt.Sprintf("asleep-inbox full (%d message cap)", b.MaxMessages)
	case queue.BoundBytes:
		msg = fmt.Sprintf("asleep-inbox full (%s total cap)", byteSize(b.MaxBytes))
	case queue.BoundPeer:
		status, msg = http.StatusTooManyRequests, "asleep-inbox peer cap reached for "+caller
	}
	answer(w, req, status, CodeQueueFull, profileAnswer{Error: tokenQueueFull, Message: msg, Kind: fe.Kind, Queued: false}, 0)
}

// CodeQueueFull is the JSON-RPC code of asleep_queue_full in Torpor's
// JSON-RPC answers: the profile defines none, and -32000 is the first of
// the implementation-defined server errors, unused by A2A.
const CodeQueueFull = -32000

func answerTooLarge(w http.ResponseWriter, max int64) {
	httpjson.Write(w, http.StatusRequestEntityTooLarge, struct {
		Error           string `json:"error"`
		Message         string `json:"message"`
		Queued          bool   `json:"queued"`
		MaxMessageBytes int64  `json:"maxMessageBytes"`
	}{tokenTooLarge, "request body exceeds the maximum message size (" + byteSize(max) + ")", false, max})
}

// answerRequiresAuth is the reference's 401 for a request without a valid
// DID Bearer token (vector od-015), with the challenge header (RFC 6750,
// Section 3). The reference's error token is kept for every agent, awake
// or not; why the token was refused is in the header's error_description
// and, for clients that show only the body, in the body's tokenError
// member and its message.
func answerRequiresAuth(w http.ResponseWriter, detail string) {
	detail = strings.ReplaceAll(detail, `"`, "")
	w.Header().Set("WWW-Authenticate", `Bearer realm="atom", error="invalid_token", error_description="`+detail+`"`)
	httpjson.Write(w, http.StatusUnauthorized, struct {
		profileAnswer
		TokenError string `json:"tokenError"`
	}{profileAnswer{Error: tokenRequiresAuth, Message: "DID Bearer token refused (" + detail + "): every request needs a valid token; store-and-forward requires verified transport caller DID"}, detail})
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
