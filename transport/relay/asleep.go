package relay

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
)

// The asleep answer is the one a relay sends most: every request stored
// for a sleeping agent gets it. answerAsleep writes it from parts
// marshalled once (asleepParts), the request's id and the Retry-After, in
// a pooled buffer: the same bytes answer (encoding/json) writes, which
// TestAsleepAnswerBytes checks, without marshalling by reflection.

// asleepParts are the static parts of one asleep answer (queued or not).
type asleepParts struct {
	callHead []byte // `{"jsonrpc":"2.0","id":`
	callMid  []byte // `,"error":{…"data":{"error":…,"queued":…` up to the first retryAfterSec
	callRest []byte // `,"message":…,"queued":…` up to the second retryAfterSec
	bare     []byte // `{"error":…,"message":…,"queued":…` up to retryAfterSec
}

var asleepAnswers = [2]asleepParts{newAsleepParts(false), newAsleepParts(true)}

func asleepMessage(queued bool) string {
	if queued {
		return "asleep, try later"
	}
	return "asleep, not accepting this request now; nothing was queued"
}

func newAsleepParts(queued bool) asleepParts {
	msg, _ := json.Marshal(asleepMessage(queued))
	q := strconv.AppendBool(nil, queued)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	return asleepParts{
		callHead: []byte(`{"jsonrpc":"2.0","id":`),
		callMid:  cat([]byte(`,"error":{"code":`+strconv.Itoa(CodeAsleep)+`,"message":`), msg, []byte(`,"data":{"error":"`+tokenAsleep+`","queued":`), q),
		callRest: cat([]byte(`,"message":`), msg, []byte(`,"queued":`), q),
		bare:     cat([]byte(`{"error":"`+tokenAsleep+`","message":`), msg, []byte(`,"queued":`), q),
	}
}

var answerBuffers = sync.Pool{New: func() any { return new([]byte) }}

// contentTypeJSON is httpjson.Write's Content-Type, as a header value.
var contentTypeJSON = []string{"application/json; charset=utf-8"}

// answerAsleep is the 503 agent_asleep answer. queued must be true only
// after the enqueue committed.
func answerAsleep(w http.ResponseWriter, req rpcRequest, queued bool, retry int) {
	if req.call && !plainID(req.id) {
		answer(w, req, http.StatusServiceUnavailable, CodeAsleep, profileAnswer{Error: tokenAsleep, Message: asleepMessage(queued), Queued: queued}, retry)
		return
	}
	p := &asleepAnswers[0]
	if queued {
		p = &asleepAnswers[1]
	}
	bp := answerBuffers.Get().(*[]byte)
	b := (*bp)[:0]
	if req.call {
		b = append(b, p.callHead...)
		b = append(b, req.id...)
		b = append(b, p.callMid...)
		b = appendRetry(b, retry)
		b = append(b, "}}"...)
		b = append(b, p.callRest...)
	} else {
		b = append(b, p.bare...)
	}
	b = appendRetry(b, retry)
	b = append(b, '}')
	h := w.Header()
	if retry > 0 {
		h["Retry-After"] = []string{strconv.Itoa(retry)}
	}
	h["Content-Type"] = contentTypeJSON
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write(b)
	*bp = b
	answerBuffers.Put(bp)
}

func appendRetry(b []byte, retry int) []byte {
	if retry <= 0 {
		return b
	}
	b = append(b, `,"retryAfterSec":`...)
	return strconv.AppendInt(b, int64(retry), 10)
}

// plainID reports whether id (valid JSON: a2a.ParseRequest checked it) is
// written as it is by encoding/json: no whitespace to compact away and
// nothing it escapes for HTML (<, >, &, U+2028, U+2029).
func plainID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	for _, c := range id {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2:
			return false
		}
	}
	return true
}
