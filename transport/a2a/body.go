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
//
// It returns the members of the top-level object, which must be one (b
// starts with '{' after white space), in their order: each name unescaped
// and its value's bytes, without the white space around them, as
// json.Unmarshal gives them in a map[string]json.RawMessage. The values
// are b's bytes, not copies.
func checkStrict(b []byte) ([]jsonMember, error) {
	// On the goroutine's stack for the usual request: a few levels and
	// names; deeper or longer ones grow onto the heap.
	var stackArr [12]jsonLevel
	var namesArr [24][]byte
	stack, names := stackArr[:0], namesArr[:0] // names: the open objects' member names
	var top []jsonMember
	value := -1 // where the top-level member's value being read starts
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			if len(stack) == MaxDepth {
				return nil, errTooDeep
			}
			stack = append(stack, jsonLevel{obj: b[i] == '{', wantKey: b[i] == '{', names: len(names)})
		case '}', ']':
			if len(stack) == 1 && value >= 0 {
				top[len(top)-1].value = trimJSONSpace(b[value:i])
			}
			names = names[:stack[len(stack)-1].names]
			stack = stack[:len(stack)-1]
		case ':':
			if len(stack) == 1 {
				value = i + 1
			}
		case ',':
			if lv := &stack[len(stack)-1]; lv.obj {
				lv.wantKey = true
			}
			if len(stack) == 1 && value >= 0 {
				top[len(top)-1].value = trimJSONSpace(b[value:i])
				value = -1
			}
		case '"':
			j := stringEnd(b, i)
			if n := len(stack); n > 0 && stack[n-1].wantKey {
				lv := &stack[n-1]
				name, err := lv.member(names[lv.names:], b[i:j+1])
				if err != nil {
					return nil, err
				}
				if lv.set == nil {
					names = append(names, name)
				}
				if n == 1 {
					top = append(top, jsonMember{name: name})
				}
			}
			i = j
		}
	}
	return top, nil
}

// jsonMember is a member of the top-level object (checkStrict).
type jsonMember struct {
	name, value []byte
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

// jsonLevel is an open object or array of checkStrict's walk.
type jsonLevel struct {
	obj     bool
	wantKey bool // the next string is a member name
	// names is where this object's member names start in checkStrict's
	// list of names, unescaped; set holds them instead past 16 members.
	names int
	set   map[string]bool
}

// member fails if the object has the member name quoted (a JSON string
// with its quotes) already: among mine, the names so far, or in l.set,
// which it starts past 16 names. It returns the name, unescaped, for the
// caller to add to mine while l.set is nil.
func (l *jsonLevel) member(mine [][]byte, quoted []byte) ([]byte, error) {
	l.wantKey = false
	name := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(quoted, '\\') >= 0 {
		var s string
		if err := json.Unmarshal(quoted, &s); err != nil {
			return nil, err
		}
		name = []byte(s)
	}
	dup := false
	switch {
	case l.set != nil:
		dup = l.set[string(name)]
		l.set[string(name)] = true
	case len(mine) < 16:
		for _, k := range mine {
			dup = dup || bytes.Equal(k, name)
		}
	default:
		l.set = make(map[string]bool, 32)
		for _, k := range mine {
			l.set[string(k)] = true
		}
		dup, l.set[string(name)] = l.set[string(name)], true
	}
	if dup {
		return nil, fmt.Errorf("%w %q", errDuplicate, truncate(string(name)))
	}
	return name, nil
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
// error, as for canon.MemberMap. It gives what json.Unmarshal into a
// map[string]json.RawMessage gives (names unquoted as it unquotes them,
// values copied), by a walk: b must be valid JSON, a value of a body
// ParseRequest accepted, which json.Valid checked already.
func checkedMembers(b []byte) (map[string]json.RawMessage, error) {
	b = trimJSONSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	m := map[string]json.RawMessage{}
	eachMemberOf(b, func(quoted, v []byte) { m[unquoteName(quoted)] = bytes.Clone(v) })
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
