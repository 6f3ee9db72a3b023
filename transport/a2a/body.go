package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// One reading of a request body for the agent and its relay.
//
// The relay classifies a body at enqueue and the agent reads it at
// dequeue; if they read the same bytes differently (encoding/json keeps
// the last of two equal member names, a reader that refuses them keeps
// none), a sender can make a record the relay stores and the agent never
// takes: a body with "method" twice, say, that is a Welcome to one and
// opaque to the other. So both read through ParseRequest, which refuses
// what either could read another way: a member name twice in any object
// at any depth, and nesting deeper than MaxDepth.

// MaxDepth is the deepest nesting of objects and arrays a request body may
// have. An A2A message with a Governed Object nests about ten levels
// (request, params, message, parts, part, data, object, payload…); 64
// leaves a payload room and keeps the walk and the decoders bounded.
const MaxDepth = 64

// Errors of checkStrict, wrapped in ParseRequest's *RPCError message.
var (
	errTooDeep   = fmt.Errorf("nested deeper than %d levels", MaxDepth)
	errDuplicate = errors.New("duplicate member")
)

// checkStrict walks valid JSON text b and fails for nesting deeper than
// MaxDepth and for an object with two members of the same name (compared
// after unescaping: RFC 8259 Section 8.3 compares names by their
// characters, not their escapes).
func checkStrict(b []byte) error {
	var stack []jsonLevel
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			if len(stack) == MaxDepth {
				return errTooDeep
			}
			stack = append(stack, jsonLevel{obj: b[i] == '{', wantKey: b[i] == '{'})
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			if top := &stack[len(stack)-1]; top.obj {
				top.wantKey = true
			}
		case '"':
			j := stringEnd(b, i)
			if n := len(stack); n > 0 && stack[n-1].wantKey {
				if err := stack[n-1].member(b[i : j+1]); err != nil {
					return err
				}
			}
			i = j
		}
	}
	return nil
}

// jsonLevel is an open object or array of checkStrict's walk.
type jsonLevel struct {
	obj     bool
	wantKey bool            // the next string is a member name
	keys    [][]byte        // the names so far, unescaped
	set     map[string]bool // instead of keys past 16 members
}

// member records the member name quoted (a JSON string with its quotes)
// and fails if the object has it already.
func (l *jsonLevel) member(quoted []byte) error {
	l.wantKey = false
	name := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(quoted, '\\') >= 0 {
		var s string
		if err := json.Unmarshal(quoted, &s); err != nil {
			return err
		}
		name = []byte(s)
	}
	dup := false
	switch {
	case l.set != nil:
		dup = l.set[string(name)]
		l.set[string(name)] = true
	case len(l.keys) < 16:
		for _, k := range l.keys {
			dup = dup || bytes.Equal(k, name)
		}
		l.keys = append(l.keys, name)
	default:
		l.set = make(map[string]bool, 32)
		for _, k := range l.keys {
			l.set[string(k)] = true
		}
		dup, l.set[string(name)] = l.set[string(name)], true
	}
	if dup {
		return fmt.Errorf("%w %q", errDuplicate, truncate(string(name)))
	}
	return nil
}

// stringEnd returns the index of the quote that closes the JSON string
// opening at b[i], which must be valid.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
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

// checkedMembers splits a JSON object that checkStrict accepted (no
// member name twice) into its members; anything but an object is an
// error, as for canon.MemberMap.
func checkedMembers(b []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

// UnquoteString decodes raw, one JSON value, into s as json.Unmarshal
// does, without the decoder when raw is a string with no escape and valid
// UTF-8 (its bytes between the quotes are then the string): the relay and
// the agent read long base64 members this way.
func UnquoteString(raw json.RawMessage, s *string) error {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		*s = string(raw[1 : n-1])
		return nil
	}
	return json.Unmarshal(raw, s)
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
