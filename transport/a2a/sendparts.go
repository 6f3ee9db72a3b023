package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode"
	"unicode/utf8"
)

// sendParts returns the message's parts of a submission's params, as
//
//	var p struct {
//		Message struct {
//			Parts []json.RawMessage `json:"parts"`
//		} `json:"message"`
//	}
//	err := json.Unmarshal(params, &p)
//
// would (an error, or p.Message.Parts), for params that are valid JSON
// (ParseRequest's): a walk over bytes already validated instead of
// encoding/json's validating them again and decoding them by reflection.
// It follows encoding/json's rules: member names match exactly or by
// case folding (its foldName), null leaves a struct as it is and makes a
// slice nil, a member matched again overwrites, a value of the wrong type
// is an error, and other members are skipped.
func (x *bodyIndex) sendParts(params []byte) ([]json.RawMessage, error) {
	var parts []json.RawMessage
	params = trimJSONSpace(params)
	if len(params) == 0 {
		return nil, errors.New("no params")
	}
	err := x.eachMember(params, "MESSAGE", func(msg []byte) error {
		return x.eachMember(msg, "PARTS", func(v []byte) error {
			switch v[0] {
			case 'n':
				parts = nil
			case '[':
				parts = x.arrayElements(v)
			default:
				return errors.New("parts is not an array")
			}
			return nil
		})
	})
	return parts, err
}

// eachMember calls f with the value of each member of obj, a valid JSON
// value, whose name folds to folded (encoding/json's foldName), in order.
// obj null calls nothing; obj of another type than object is an error, and
// so is any error of f (the first: encoding/json goes on, and reports the
// first).
func (x *bodyIndex) eachMember(obj []byte, folded string, f func(value []byte) error) error {
	var firstErr error
	err := x.eachMemberOf(obj, func(quoted, v []byte) {
		if foldsTo(quoted, folded) {
			if err := f(v); err != nil && firstErr == nil {
				firstErr = err
			}
		}
	})
	if err != nil {
		return err
	}
	return firstErr
}

// foldsTo reports whether the member name quoted, a JSON string, unquoted
// as encoding/json unquotes it, folds to folded (ASCII capitals).
func foldsTo(quoted []byte, folded string) bool {
	var arr [32]byte
	return string(appendFolded(arr[:0], quoted)) == folded
}

// appendFolded appends encoding/json's foldName of the member name quoted
// to out, without unquoting a name that is ASCII with no escape (the
// folding of an ASCII letter is its capital, the smallest rune of its
// fold set, as foldRune gives).
func appendFolded(out, quoted []byte) []byte {
	name := quoted[1 : len(quoted)-1]
	plain := true
	for _, c := range name {
		if c >= utf8.RuneSelf || c == '\\' {
			plain = false
			break
		}
	}
	if !plain {
		name = []byte(unquoteName(quoted))
	}
	for i := 0; i < len(name); {
		if c := name[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(name[i:])
		out = utf8.AppendRune(out, foldRune(r))
		i += n
	}
	return out
}

// unquoteName unquotes a member name, a valid JSON string with its quotes,
// as encoding/json does (escapes decoded, invalid UTF-8 replaced).
func unquoteName(quoted []byte) string {
	name := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(name, '\\') < 0 && utf8.Valid(name) {
		return string(name)
	}
	var s string
	json.Unmarshal(quoted, &s) // valid: cannot fail
	return s
}

// foldRune is encoding/json's: the smallest rune of r's fold set.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// arrayElements returns the elements of arr, a valid JSON array, as
// copies without an index (json.RawMessage copies what it decodes) and as
// slices of the body with one; [] gives an empty, non-nil slice, as
// encoding/json does.
func (x *bodyIndex) arrayElements(arr []byte) []json.RawMessage {
	out := []json.RawMessage{}
	for i := skipJSONSpace(arr, 1); arr[i] != ']'; {
		end := x.valueEnd(arr, i)
		out = append(out, x.clone(arr[i:end]))
		i = skipJSONSpace(arr, end)
		if arr[i] == ',' {
			i = skipJSONSpace(arr, i+1)
		}
	}
	return out
}

func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the index just past the valid JSON value starting at
// b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i) + 1
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j)
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for ; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
	}
	return j
}

// checkedPart is DecodePart for raw that is valid JSON, a part of a body
// ParseRequest accepted: the fields of Part are read by a walk that
// follows encoding/json's rules (names matched exactly or case-folded,
// null leaves a string as it is, makes Text nil and is kept as "null" by
// a json.RawMessage, a string field given another type is an error), and
// a part without content goes to DecodePart for the bare shape.
func (x *bodyIndex) checkedPart(raw json.RawMessage) (Part, error) {
	var p Part
	var firstErr error
	err := x.eachMemberOf(trimJSONSpace(raw), func(quoted, v []byte) {
		var err error
		var arr [32]byte
		switch string(appendFolded(arr[:0], quoted)) {
		case "KIND":
			err = stringField(v, &p.Kind)
		case "TEXT":
			err = stringPtrField(v, &p.Text)
		case "DATA":
			p.Data = x.clone(v)
		case "RAW":
			p.Raw = x.clone(v)
		case "URL":
			p.URL = x.clone(v)
		case "FILE":
			p.File = x.clone(v)
		case "FILENAME":
			err = stringField(v, &p.Filename)
		case "MEDIATYPE":
			err = stringField(v, &p.MediaType)
		case "METADATA":
			p.Metadata = x.clone(v)
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
	})
	if err = errors.Join(err, firstErr); err != nil {
		return Part{}, err
	}
	if p.Data != nil || p.Text != nil || p.Raw != nil || p.URL != nil || p.File != nil {
		return p, nil
	}
	return DecodePart(raw)
}

func stringField(v []byte, dst *string) error {
	switch v[0] {
	case 'n':
		return nil
	case '"':
		return UnquoteString(v, dst)
	}
	return errors.New("not a string")
}

func stringPtrField(v []byte, dst **string) error {
	switch v[0] {
	case 'n':
		*dst = nil
		return nil
	case '"':
		var s string
		err := UnquoteString(v, &s)
		*dst = &s
		return err
	}
	return errors.New("not a string")
}

// eachMemberOf calls f with each member's name (quoted) and value of obj,
// a valid JSON value, in order; null calls nothing, another type than
// object is an error.
func (x *bodyIndex) eachMemberOf(obj []byte, f func(quoted, value []byte)) error {
	switch obj[0] {
	case 'n':
		return nil
	case '{':
	default:
		return errors.New("not an object")
	}
	for i := skipJSONSpace(obj, 1); obj[i] != '}'; {
		end := stringEnd(obj, i)
		v := skipJSONSpace(obj, skipJSONSpace(obj, end+1)+1) // past ':'
		vend := x.valueEnd(obj, v)
		f(obj[i:end+1], obj[v:vend])
		if i = skipJSONSpace(obj, vend); obj[i] == ',' {
			i = skipJSONSpace(obj, i+1)
		}
	}
	return nil
}
