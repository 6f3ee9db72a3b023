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
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/torpor-dev/torpor/internal/strictjson"
)

// Transform returns the canonical form of the JSON text b. It refuses,
// with an error wrapping a *strictjson.Error, what internal/strictjson
// refuses.
func Transform(b []byte) ([]byte, error) {
	// The canonical form is seldom longer than the text: it drops white
	// space and escapes no more than JSON must.
	return Append(make([]byte, 0, len(b)), b)
}

// Append appends the canonical form of the JSON text b to dst, as
// Transform returns it.
func Append(dst, b []byte) ([]byte, error) {
	var s strictjson.Scanner
	s.Reset(b)
	tok, err := s.Next()
	if err != nil {
		return nil, fmt.Errorf("jcs: %w", err)
	}
	out, err := value(&s, b, tok, dst)
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
		if bytes.IndexByte(raw, '\\') < 0 {
			// Without an escape the string's text is its characters,
			// none of them a quotation mark or a control character (the
			// Scanner refused those unescaped): the canonical form is
			// the text as read.
			return append(out, raw...), nil
		}
		return appendString(out, strictjson.AppendUnquoted(nil, raw)), nil
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

// member is one object member: its name, unescaped (the sort key of RFC
// 8785, Section 3.2.3, compared as UTF-16 code units by less16), and where
// its canonical "name":value text is in the output.
type member struct {
	name       []byte
	start, end int
}

// object appends a canonical object: its members sorted by name. The
// Scanner refused a name twice.
//
// Each member's canonical text is appended to out as it is read, with the
// commas of the input order. Objects whose members come sorted (most do)
// are then complete; the others are rewritten in sorted order from one
// copy of their members' text. A nested object sorts itself in place
// before its parent sorts, keeping its length, so the parent's offsets
// hold.
func object(s *strictjson.Scanner, b []byte, out []byte) ([]byte, error) {
	open := len(out)
	out = append(out, '{')
	var buf [8]member
	members, sorted := buf[:0], true
	for {
		name, err := s.Next()
		if err != nil {
			return nil, err
		}
		if name.Kind == strictjson.EndObject {
			break
		}
		tok, err := s.Next()
		if err != nil {
			return nil, err
		}
		if len(members) > 0 {
			out = append(out, ',')
		}
		m := member{name: name.Name, start: len(out)}
		out = append(appendString(out, name.Name), ':')
		if out, err = value(s, b, tok, out); err != nil {
			return nil, err
		}
		m.end = len(out)
		if n := len(members); n > 0 && !less16(members[n-1].name, m.name) {
			sorted = false
		}
		members = append(members, m)
	}
	if !sorted {
		out = sortMembers(out, open, members)
	}
	return append(out, '}'), nil
}

// sortMembers rewrites the members of the object that opens at out[open]
// in sorted order, and returns out up to the last member.
func sortMembers(out []byte, open int, members []member) []byte {
	text := bytes.Clone(out[open:])
	slices.SortFunc(members, func(a, b member) int {
		if less16(a.name, b.name) {
			return -1
		}
		return 1 // names differ: the Scanner refused a name twice
	})
	out = out[:open+1]
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, text[m.start-open:m.end-open]...)
	}
	return out
}

// less16 orders names, UTF-8 text, as their UTF-16 code unit sequences
// compare as unsigned integers, element by element, a shorter prefix first
// (RFC 8785, Section 3.2.3).
func less16(a, b []byte) bool {
	for len(a) > 0 && len(b) > 0 {
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb {
			a1, a2 := units16(ra)
			b1, b2 := units16(rb)
			if a1 != b1 {
				return a1 < b1
			}
			return a2 < b2
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) < len(b)
}

// units16 returns r's UTF-16 code units: a surrogate pair beyond the
// Basic Multilingual Plane, else r and 0. Two different runes with the
// same first unit are both beyond it (the Scanner refused lone
// surrogates), so the second units order them.
func units16(r rune) (uint16, uint16) {
	if r < 0x10000 {
		return uint16(r), 0
	}
	hi, lo := utf16.EncodeRune(r)
	return uint16(hi), uint16(lo)
}
