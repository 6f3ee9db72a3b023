// Package jcs transforms JSON text into its canonical form, the JSON
// Canonicalization Scheme (JCS) of RFC 8785, written for this module from
// the RFC.
//
// The input is read strictly, by internal/strictjson, the module's one
// strict reader: one JSON text (RFC 8259), valid UTF-8, no lone surrogate
// in a \u escape, no duplicate member name, no number outside the IEEE 754
// double range, and nesting no deeper than strictjson.MaxDepth (RFC 8785,
// Section 3.1 asks for I-JSON, RFC 7493). The output sorts object members
// by their names' UTF-16 code units (Section 3.2.3), writes strings with
// the minimal escaping of Section 3.2.2.2 and numbers as ECMAScript's
// Number.prototype.toString does (Section 3.2.2.3), without white space.
//
// The project's design names github.com/gowebpki/jcs for this; that module
// checks numbers with package regexp, which made the armv6 torpor-agent
// 256 KiB larger (docs/footprint.md). This package links no regexp, and its
// tests compare it with gowebpki/jcs on generated inputs and under the
// fuzzer (FuzzAgainstUpstream). Use it through internal/canon.
package jcs

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"unicode/utf16"

	"github.com/torpor-dev/torpor/internal/strictjson"
)

// Transform returns the canonical form of the JSON text b. It refuses,
// with an error wrapping a *strictjson.Error, what internal/strictjson
// refuses.
func Transform(b []byte) ([]byte, error) {
	var s strictjson.Scanner
	s.Reset(b)
	tok, err := s.Next()
	if err != nil {
		return nil, fmt.Errorf("jcs: %w", err)
	}
	out, err := value(&s, b, tok, nil)
	if err != nil {
		return nil, fmt.Errorf("jcs: %w", err)
	}
	if _, err := s.Next(); err != io.EOF {
		return nil, fmt.Errorf("jcs: %w", err)
	}
	return out, nil
}

// value appends the canonical form of the value that starts with tok,
// read from s, the Scanner of b.
func value(s *strictjson.Scanner, b []byte, tok strictjson.Token, out []byte) ([]byte, error) {
	raw := b[tok.Offset:tok.End]
	switch tok.Kind {
	case strictjson.BeginObject:
		return object(s, b, out)
	case strictjson.BeginArray:
		return array(s, b, out)
	case strictjson.String:
		return appendString(out, string(strictjson.AppendUnquoted(nil, raw))), nil
	case strictjson.Number:
		// The Scanner refused a number beyond the double range.
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return nil, err
		}
		return appendNumber(out, f), nil
	}
	return append(out, raw...), nil // true, false, null
}

// array appends a canonical array: its elements in order.
func array(s *strictjson.Scanner, b []byte, out []byte) ([]byte, error) {
	out = append(out, '[')
	for n := 0; ; n++ {
		tok, err := s.Next()
		if err != nil {
			return nil, err
		}
		if tok.Kind == strictjson.EndArray {
			return append(out, ']'), nil
		}
		if n > 0 {
			out = append(out, ',')
		}
		if out, err = value(s, b, tok, out); err != nil {
			return nil, err
		}
	}
}

// member is one object member: its name as UTF-16 code units (the sort key
// of RFC 8785, Section 3.2.3) and its canonical "name":value text.
type member struct {
	key  []uint16
	text []byte
}

// object appends a canonical object: its members sorted by name. The
// Scanner refused a name twice.
func object(s *strictjson.Scanner, b []byte, out []byte) ([]byte, error) {
	var members []member
	for {
		name, err := s.Next()
		if err != nil {
			return nil, err
		}
		if name.Kind == strictjson.EndObject {
			return appendMembers(out, members), nil
		}
		tok, err := s.Next()
		if err != nil {
			return nil, err
		}
		text := append(appendString(nil, string(name.Name)), ':')
		if text, err = value(s, b, tok, text); err != nil {
			return nil, err
		}
		members = append(members, member{key: utf16.Encode([]rune(string(name.Name))), text: text})
	}
}

func appendMembers(out []byte, members []member) []byte {
	sort.Slice(members, func(i, j int) bool { return less16(members[i].key, members[j].key) })
	out = append(out, '{')
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m.text...)
	}
	return append(out, '}')
}

// less16 orders UTF-16 code unit sequences as unsigned integers, element by
// element, a shorter prefix first (RFC 8785, Section 3.2.3).
func less16(a, b []uint16) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}
