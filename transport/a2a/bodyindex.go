package a2a

import (
	"bytes"
	"encoding/json"

	"github.com/torpor-dev/torpor/internal/strictjson"
)

// bodyIndex is what ReadBody learns of a body in its one strict pass
// (strictjson.Index): the body and where each of its objects and arrays
// down to a part's data members starts and ends. The walks of
// sendparts.go take one: with it, where a nested value ends is looked up
// instead of read again, and the values they return alias the body
// instead of copies of it. A nil *bodyIndex reads and copies, as the
// walks did alone.
type bodyIndex struct {
	body  []byte
	spans []strictjson.Span
}

// indexLevels is how deep ReadBody's walks look for where a value ends:
// the request (1), params, message, parts, a part, its data, and the
// data's members' values (7).
const indexLevels = 7

// valueEnd is valueEnd(b, i), from the index when b[i] opens an object or
// array the index holds.
func (x *bodyIndex) valueEnd(b []byte, i int) int {
	if c := b[i]; x != nil && (c == '{' || c == '[') {
		if end := x.end(b, i); end > i && end <= len(b) {
			return end
		}
	}
	return valueEnd(b, i)
}

// end returns the index in b just past the object or array at b[i], when
// b is a slice of the body (its element i is the body's element at the
// same offset, which the capacities give) and the index holds it; else -1.
func (x *bodyIndex) end(b []byte, i int) int {
	pos := cap(x.body) - cap(b) + i
	if pos < 0 || pos >= len(x.body) || &x.body[pos] != &b[i] {
		return -1
	}
	lo, hi := 0, len(x.spans)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if x.spans[m].Start < pos {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(x.spans) || x.spans[lo].Start != pos || x.spans[lo].End == 0 {
		return -1
	}
	return x.spans[lo].End - pos + i
}

// clone is v itself for an index (v aliases the body, which the caller
// keeps) and a copy of it without one, as json.RawMessage copies what it
// decodes.
func (x *bodyIndex) clone(v []byte) json.RawMessage {
	if x != nil {
		return v
	}
	return bytes.Clone(v)
}
