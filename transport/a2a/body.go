package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/torpor-dev/torpor/internal/strictjson"
)

// One reading of a request body for the agent and its relay.
//
// The relay classifies a body at enqueue and the agent reads it at
// dequeue; if they read the same bytes differently (encoding/json keeps
// the last of two equal member names, a reader that refuses them keeps
// none), a sender can make a record the relay stores and the agent never
// takes: a body with "method" twice, say, that is a Welcome to one and
// opaque to the other. So both read through ParseRequest, which reads
// through internal/strictjson, the module's one strict reader: it
// refuses what either could read another way: a member name twice in any
// object at any depth, nesting deeper than MaxDepth, a string that is not
// Unicode text and a number beyond the double range.

// MaxDepth is the deepest nesting of objects and arrays a request body may
// have (strictjson.MaxDepth). An A2A message with a Governed Object nests
// about ten levels (request, params, message, parts, part, data, object,
// payload…); 64 leaves a payload room and keeps the walk and the decoders
// bounded.
const MaxDepth = strictjson.MaxDepth

// readStrict checks b with strictjson and returns its top-level object's
// members, appended to dst, and the spans of its objects and arrays at
// most levels deep, appended to spans (strictjson.Index), or
// ParseRequest's *RPCError: a parse error for text that is not JSON, an
// invalid request for the rest. Refusals come in the order of the text: a
// body nested too deep before a syntax error is an invalid request.
func readStrict(b []byte, dst []strictjson.Member, spans []strictjson.Span, levels int) ([]strictjson.Member, []strictjson.Span, *RPCError) {
	members, spans, err := strictjson.Index(b, dst, spans, levels)
	if err != nil {
		return nil, nil, strictRefusal(err)
	}
	return members, spans, nil
}

// strictRefusal is readStrict's *RPCError for strictjson's refusal err.
func strictRefusal(err error) *RPCError {
	var e *strictjson.Error
	switch {
	case !errors.As(err, &e) || e.Err == strictjson.ErrSyntax:
		return &RPCError{Code: CodeParseError, Message: "Parse error"}
	case e.Err == strictjson.ErrDuplicate:
		return invalidRequest(fmt.Sprintf("duplicate member %q", truncate(e.Name)))
	}
	return invalidRequest(e.Err.Error())
}

func invalidRequest(why string) *RPCError {
	return &RPCError{Code: CodeInvalidRequest, Message: "Invalid Request: " + why}
}

// trimJSONSpace trims JSON's white space (RFC 8259, Section 2).
func trimJSONSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// stringEnd returns the index of the quote that closes the JSON string
// opening at b[i], which must be valid: the first quote after it that an
// even number of reverse solidi precede. In a valid string a reverse
// solidus only starts an escape, and the escaped reverse solidus is the
// one escape that ends in one, so an odd number escapes the quote.
// bytes.IndexByte finds each quote.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			break
		}
		j += k
		n := 0
		for n < j-i-1 && b[j-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return j
		}
	}
	return len(b) - 1
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// checkedMembers splits a JSON object that readStrict accepted (no
// member name twice) into its members; anything but an object is an
// error, as for canon.MemberMap. It gives what json.Unmarshal into a
// map[string]json.RawMessage gives (names unquoted as it unquotes them,
// values copied; with an index, slices of the body), by a walk: b must be valid JSON, a value of a body
// ParseRequest accepted, which json.Valid checked already.
func (x *bodyIndex) checkedMembers(b []byte) (map[string]json.RawMessage, error) {
	b = trimJSONSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	m := map[string]json.RawMessage{}
	x.eachMemberOf(b, func(quoted, v []byte) { m[unquoteName(quoted)] = x.clone(v) })
	return m, nil
}

// UnquoteString decodes raw, one JSON value, into s as json.Unmarshal
// does, without the decoder when raw is a string with no escape and valid
// UTF-8 (its bytes between the quotes are then the string): the relay and
// the agent read long base64 members this way. A string that every
// request carries (knownString) is not allocated again.
func UnquoteString(raw json.RawMessage, s *string) error {
	if text, ok := plainString(raw); ok {
		if *s, ok = knownString(text); !ok {
			*s = string(text)
		}
		return nil
	}
	v, err := decodeString(raw, *s)
	*s = v
	return err
}

// decodeString is json.Unmarshal of raw into a string that holds cur, and
// that string after it (cur when raw is null or not a string). Being apart
// from UnquoteString, it keeps UnquoteString's s from the decoder, so that
// its callers' strings (a Part's, say) stay off the heap.
func decodeString(raw json.RawMessage, cur string) (string, error) {
	v := cur
	err := json.Unmarshal(raw, &v)
	return v, err
}

// knownString returns the constant equal to text, for the strings that
// ReadBody reads from almost every body: the JSON-RPC version, the
// submission methods and the object media types.
func knownString(text []byte) (string, bool) {
	switch string(text) { // no allocation: the compiler compares the bytes
	case "2.0":
		return "2.0", true
	case MethodSendMessage:
		return MethodSendMessage, true
	case MethodSendStreamingMessage:
		return MethodSendStreamingMessage, true
	case MethodMessageSend:
		return MethodMessageSend, true
	case MethodMessageStream:
		return MethodMessageStream, true
	case MediaTypeDataObject:
		return MediaTypeDataObject, true
	case MediaTypeMLSWire:
		return MediaTypeMLSWire, true
	case MediaTypeMLSHandshake:
		return MediaTypeMLSHandshake, true
	case MediaTypeEncryptedDataObject:
		return MediaTypeEncryptedDataObject, true
	}
	return "", false
}

// plainString returns the text of raw when raw is a JSON string with no
// escape and valid UTF-8: the bytes between its quotes are then the
// string json.Unmarshal gives.
func plainString(raw []byte) ([]byte, bool) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return raw[1 : n-1], true
	}
	return nil, false
}

// validID reports whether id (raw JSON) is what JSON-RPC 2.0 Section 4
// allows: a string, null, or a number; and for a number, one that a
// float64 holds (1e400 is not), so that no peer reads it as another id.
func validID(id json.RawMessage) bool {
	switch c := firstByte(id); {
	case c == '"' || c == 'n':
		return true
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := strconv.ParseFloat(string(bytes.TrimSpace(id)), 64)
		return err == nil
	}
	return false
}
