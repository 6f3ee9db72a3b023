package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/torpor-dev/torpor/internal/strictjson"
)

// JSON-RPC 2.0 (https://www.jsonrpc.org/specification) is the A2A binding
// Torpor speaks on /a2a/jsonrpc.

// Message-submission methods of the two A2A versions.
const (
	MethodSendMessage          = "SendMessage"          // v1.0
	MethodSendStreamingMessage = "SendStreamingMessage" // v1.0
	MethodMessageSend          = "message/send"         // v0.3
	MethodMessageStream        = "message/stream"       // v0.3
)

// JSON-RPC error codes: the standard ones (JSON-RPC 2.0 Section 5.1) and
// A2A's. Note that the offline-delivery draft's -32003 for agent_asleep
// collides with A2A's PushNotificationNotSupported; the reference does not
// emit it.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	CodeTaskNotFound                 = -32001
	CodeTaskNotCancelable            = -32002
	CodePushNotificationNotSupported = -32003
	CodeUnsupportedOperation         = -32004
	CodeContentTypeNotSupported      = -32005
	CodeInvalidAgentResponse         = -32006
)

// Request is a JSON-RPC 2.0 request. ID is the raw id (a string, a number
// or null); nil means the member was absent, which makes the request a
// notification.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	ID      json.RawMessage `json:"id,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// Response is a JSON-RPC 2.0 response: exactly one of Result and Error is
// set. ID echoes the request's id (null when it could not be read).
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is the error object of a response. It implements error.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("a2a: JSON-RPC error %d: %s", e.Code, e.Message)
}

// ParseRequest decodes and checks one JSON-RPC request (batches are not
// part of A2A). It returns an *RPCError with CodeParseError for text that is
// not JSON and CodeInvalidRequest for text that is not one request: not an
// object, not strict JSON (a member name twice in any object at any depth,
// nesting deeper than MaxDepth, a string that is not Unicode text, a number
// beyond the double range: body.go, the agent and its relay must read the
// same request), a wrong jsonrpc version, a missing or non-string method, an id
// that is not a string, a number a float64 holds or null (JSON-RPC 2.0
// Section 4), or params that are not an object or array. Answer such a
// request with id null (Section 5).
func ParseRequest(b []byte) (*Request, error) {
	// One walk checks the whole body and splits the top-level object; on
	// the goroutine's stack for a request of a few members.
	var arr [8]strictjson.Member
	members, _, rerr := readStrict(b, arr[:0], nil, 0)
	if rerr != nil {
		return nil, rerr
	}
	return (*bodyIndex)(nil).request(members)
}

// request is the rest of ParseRequest, on the top-level members of a
// body strictjson accepted. With an index (ReadBody's) the id and params
// it returns alias the body.
func (x *bodyIndex) request(members []strictjson.Member) (*Request, error) {
	invalid := func(why string) error { return invalidRequest(why) }
	m := func(name string) (json.RawMessage, bool) {
		for _, e := range members {
			if string(e.Name) == name {
				return e.Value, true
			}
		}
		return nil, false
	}
	jsonrpc, _ := m("jsonrpc")
	method, _ := m("method")
	var r Request
	if err := UnquoteString(jsonrpc, &r.JSONRPC); err != nil || r.JSONRPC != "2.0" {
		return nil, invalid(`jsonrpc must be "2.0"`)
	}
	if err := UnquoteString(method, &r.Method); err != nil || r.Method == "" {
		return nil, invalid("method must be a non-empty string")
	}
	if id, ok := m("id"); ok {
		if !validID(id) {
			return nil, invalid("id must be a string, a number within range or null")
		}
		r.ID = x.clone(id) // a copy, as json.Unmarshal made, without an index
	}
	if p, ok := m("params"); ok {
		if c := firstByte(p); c != '{' && c != '[' {
			return nil, invalid("params must be an object or an array")
		}
		r.Params = x.clone(p)
	}
	return &r, nil
}

func firstByte(b []byte) byte {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// NewResult returns a success response to id with result marshalled.
func NewResult(id json.RawMessage, result any) (*Response, error) {
	b, err := json.Marshal(result)
	if err != nil {
		return nil, fmt.Errorf("a2a: %v", err)
	}
	return &Response{JSONRPC: "2.0", ID: idOrNull(id), Result: b}, nil
}

// NewError returns an error response to id.
func NewError(id json.RawMessage, e *RPCError) *Response {
	return &Response{JSONRPC: "2.0", ID: idOrNull(id), Error: e}
}

func idOrNull(id json.RawMessage) json.RawMessage {
	if id == nil {
		return json.RawMessage("null")
	}
	return id
}

// SendMessageParams are the params of SendMessage (v1.0) and message/send
// (v0.3).
type SendMessageParams struct {
	Message       Message         `json:"message"`
	Configuration json.RawMessage `json:"configuration,omitempty"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
}

// IsSendMethod reports whether method submits a message in either version.
func IsSendMethod(method string) bool {
	switch method {
	case MethodSendMessage, MethodSendStreamingMessage, MethodMessageSend, MethodMessageStream:
		return true
	}
	return false
}

// ParseSendMessage decodes the params of a message-submission request and
// validates the message. It returns an *RPCError: CodeMethodNotFound for
// another method, CodeInvalidParams for params that do not hold a valid
// message.
func ParseSendMessage(r *Request) (*SendMessageParams, error) {
	if !IsSendMethod(r.Method) {
		return nil, &RPCError{Code: CodeMethodNotFound, Message: "Method not found"}
	}
	var p SendMessageParams
	if err := json.Unmarshal(r.Params, &p); err != nil {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "Invalid params: " + err.Error()}
	}
	if err := p.Message.Validate(); err != nil {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "Invalid params: " + err.Error()}
	}
	return &p, nil
}

// NewSendMessage returns the request that sends m in the shape of A2A
// version v: method SendMessage with the v1.0 message, or message/send with
// the v0.3 message.
func NewSendMessage(id json.RawMessage, v string, m Message) (*Request, error) {
	method := MethodSendMessage
	if v == Version03 {
		method = MethodMessageSend
	}
	cfg := json.RawMessage("{}")
	if v == Version03 {
		cfg = nil
	}
	b, err := json.Marshal(SendMessageParams{Message: m.ForVersion(v), Configuration: cfg})
	if err != nil {
		return nil, fmt.Errorf("a2a: %v", err)
	}
	return &Request{JSONRPC: "2.0", Method: method, ID: id, Params: b}, nil
}

// NewSendResult returns the successful response to a message submission
// answered with m, in the shape of A2A version v: for 1.0 the
// SendMessageResponse {"message": m} (the ProtoJSON form of its payload
// oneof, A2A v1.0 specification, SendMessage), for 0.3 the message itself,
// with kind "message".
func NewSendResult(id json.RawMessage, v string, m Message) (*Response, error) {
	if v == Version03 {
		return NewResult(id, m.ForVersion(v))
	}
	return NewResult(id, struct {
		Message Message `json:"message"`
	}{m.ForVersion(Version10)})
}
