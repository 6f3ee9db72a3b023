// Package jcs transforms JSON text into its canonical form, the JSON
// Canonicalization Scheme (JCS) of RFC 8785, written for this module from
// the RFC.
//
// The input is read strictly: one JSON text (RFC 8259), valid UTF-8, no
// lone surrogate in a \u escape, no duplicate member name and no number
// outside IEEE 754 double precision (RFC 8785, Section 3.1 asks for I-JSON,
// RFC 7493). The output sorts object members by their names' UTF-16 code
// units (Section 3.2.3), writes strings with the minimal escaping of
// Section 3.2.2.2 and numbers as ECMAScript's Number.prototype.toString
// does (Section 3.2.2.3), without white space.
//
// The project's design names github.com/gowebpki/jcs for this; that module
// checks numbers with package regexp, which made the armv6 torpor-agent
// 256 KiB larger (docs/footprint.md). This package links no regexp, and its
// test compares it with gowebpki/jcs on generated inputs. Use it through
// internal/canon.
package jcs

import (
	"errors"
	"fmt"
	"sort"
	"unicode/utf16"
)

// Transform returns the canonical form of the JSON text b.
func Transform(b []byte) ([]byte, error) {
	p := parser{in: b}
	p.space()
	out, err := p.value(nil)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.in) {
		return nil, p.errorf("data after the JSON value")
	}
	return out, nil
}

// parser reads JSON text and appends the canonical form of what it read.
type parser struct {
	in  []byte
	pos int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("jcs: offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

// space skips the white space of RFC 8259, Section 2.
func (p *parser) space() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value appends the canonical form of the value at p.pos to out.
func (p *parser) value(out []byte) ([]byte, error) {
	if p.pos >= len(p.in) {
		return nil, p.errorf("unexpected end of JSON text")
	}
	switch c := p.in[p.pos]; {
	case c == '{':
		return p.object(out)
	case c == '[':
		return p.array(out)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return appendString(out, s), nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(out)
	default:
		return p.literal(out)
	}
}

// literal appends true, false or null.
func (p *parser) literal(out []byte) ([]byte, error) {
	for _, lit := range []string{"true", "false", "null"} {
		if len(p.in)-p.pos >= len(lit) && string(p.in[p.pos:p.pos+len(lit)]) == lit {
			p.pos += len(lit)
			return append(out, lit...), nil
		}
	}
	return nil, p.errorf("invalid character %q looking for a value", p.in[p.pos])
}

// array appends a canonical array: its elements in order.
func (p *parser) array(out []byte) ([]byte, error) {
	p.pos++ // [
	out = append(out, '[')
	p.space()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		return append(out, ']'), nil
	}
	for {
		p.space()
		var err error
		if out, err = p.value(out); err != nil {
			return nil, err
		}
		p.space()
		end, err := p.separator(']')
		if err != nil {
			return nil, err
		}
		if end {
			return append(out, ']'), nil
		}
		out = append(out, ',')
	}
}

// separator reads a ',' (false) or the closing byte (true).
func (p *parser) separator(closing byte) (bool, error) {
	if p.pos >= len(p.in) {
		return false, p.errorf("unexpected end of JSON text")
	}
	switch p.in[p.pos] {
	case ',':
		p.pos++
		return false, nil
	case closing:
		p.pos++
		return true, nil
	}
	return false, p.errorf("invalid character %q after a value", p.in[p.pos])
}

// member is one object member: its name as UTF-16 code units (the sort key
// of RFC 8785, Section 3.2.3) and its canonical "name":value text.
type member struct {
	key  []uint16
	text []byte
}

// object appends a canonical object: its members sorted by name.
func (p *parser) object(out []byte) ([]byte, error) {
	p.pos++ // {
	p.space()
	var members []member
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		return append(out, '{', '}'), nil
	}
	seen := map[string]bool{}
	for {
		p.space()
		m, name, err := p.member()
		if err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, p.errorf("duplicate member name %q", name)
		}
		seen[name] = true
		members = append(members, m)
		p.space()
		end, err := p.separator('}')
		if err != nil {
			return nil, err
		}
		if end {
			break
		}
	}
	return appendMembers(out, members), nil
}

// member reads one "name": value pair.
func (p *parser) member() (member, string, error) {
	if p.pos >= len(p.in) || p.in[p.pos] != '"' {
		return member{}, "", p.errorf("expected a member name")
	}
	name, err := p.str()
	if err != nil {
		return member{}, "", err
	}
	p.space()
	if p.pos >= len(p.in) || p.in[p.pos] != ':' {
		return member{}, "", p.errorf("expected ':' after a member name")
	}
	p.pos++
	p.space()
	text := appendString(nil, name)
	text = append(text, ':')
	if text, err = p.value(text); err != nil {
		return member{}, "", err
	}
	return member{key: utf16.Encode([]rune(name)), text: text}, name, nil
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

var errLoneSurrogate = errors.New("lone surrogate")
