package jcs

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// str reads a JSON string (RFC 8259, Section 7) at p.pos and returns its
// value. Raw bytes must be valid UTF-8 and \u escapes must not leave a
// surrogate unpaired: such a string is no sequence of Unicode scalar values
// and has no canonical form.
func (p *parser) str() (string, error) {
	p.pos++ // opening quote
	var sb strings.Builder
	for {
		if p.pos >= len(p.in) {
			return "", p.errorf("unterminated string")
		}
		c := p.in[p.pos]
		switch {
		case c == '"':
			p.pos++
			return sb.String(), nil
		case c == '\\':
			if err := p.escape(&sb); err != nil {
				return "", err
			}
		case c < 0x20:
			return "", p.errorf("control character %#x in a string", c)
		case c < utf8.RuneSelf:
			sb.WriteByte(c)
			p.pos++
		default:
			r, n := utf8.DecodeRune(p.in[p.pos:])
			if r == utf8.RuneError && n <= 1 {
				return "", p.errorf("invalid UTF-8 in a string")
			}
			sb.WriteRune(r)
			p.pos += n
		}
	}
}

// escape reads one escape sequence after a backslash.
func (p *parser) escape(sb *strings.Builder) error {
	if p.pos+1 >= len(p.in) {
		return p.errorf("unterminated escape")
	}
	c := p.in[p.pos+1]
	p.pos += 2
	switch c {
	case '"', '\\', '/':
		sb.WriteByte(c)
	case 'b':
		sb.WriteByte('\b')
	case 'f':
		sb.WriteByte('\f')
	case 'n':
		sb.WriteByte('\n')
	case 'r':
		sb.WriteByte('\r')
	case 't':
		sb.WriteByte('\t')
	case 'u':
		r, err := p.unicodeEscape()
		if err != nil {
			return err
		}
		sb.WriteRune(r)
	default:
		return p.errorf("invalid escape \\%c", c)
	}
	return nil
}

// unicodeEscape reads the hex digits of a \u escape, and the low half's
// escape after a high surrogate.
func (p *parser) unicodeEscape() (rune, error) {
	r, err := p.hex4()
	if err != nil {
		return 0, err
	}
	if !utf16.IsSurrogate(r) {
		return r, nil
	}
	if r >= 0xdc00 || p.pos+1 >= len(p.in) || p.in[p.pos] != '\\' || p.in[p.pos+1] != 'u' {
		return 0, p.errorf("%v", errLoneSurrogate)
	}
	p.pos += 2
	low, err := p.hex4()
	if err != nil {
		return 0, err
	}
	pair := utf16.DecodeRune(r, low)
	if pair == utf8.RuneError {
		return 0, p.errorf("%v", errLoneSurrogate)
	}
	return pair, nil
}

func (p *parser) hex4() (rune, error) {
	if p.pos+4 > len(p.in) {
		return 0, p.errorf("short \\u escape")
	}
	v, err := strconv.ParseUint(string(p.in[p.pos:p.pos+4]), 16, 16)
	if err != nil {
		return 0, p.errorf("invalid \\u escape %q", p.in[p.pos:p.pos+4])
	}
	p.pos += 4
	return rune(v), nil
}

// appendString writes s as RFC 8785, Section 3.2.2.2 says: quotation mark
// and reverse solidus escaped, the control characters with their short
// escape where JSON has one and \u00xx (lower-case hex) otherwise, every
// other character as itself.
func appendString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c == '\b':
			out = append(out, '\\', 'b')
		case c == '\t':
			out = append(out, '\\', 't')
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\f':
			out = append(out, '\\', 'f')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c < 0x20:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}

// number reads a number (RFC 8259, Section 6) and appends its canonical
// form.
func (p *parser) number(out []byte) ([]byte, error) {
	start := p.pos
	p.pos = scanNumber(p.in, p.pos)
	if p.pos == start {
		return nil, p.errorf("invalid number")
	}
	f, err := strconv.ParseFloat(string(p.in[start:p.pos]), 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, p.errorf("number %s is not an IEEE 754 double", p.in[start:p.pos])
	}
	return appendNumber(out, f), nil
}

// scanNumber returns the end of the number grammar's longest match at i,
// or i when there is none: -? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) int {
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return start
	}
	if i < len(b) && b[i] == '.' {
		if j := digits(b, i+1); j > i+1 {
			i = j
		} else {
			return start
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		j := i + 1
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := digits(b, j)
		if k == j {
			return start
		}
		i = k
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// appendNumber writes f as ECMAScript's Number::toString (ECMA-262,
// Section 6.1.6.1.20), which RFC 8785, Section 3.2.2.3 adopts: the shortest
// digits that read back as f (strconv gives the same), placed by the
// decimal exponent n: plain digits up to 21 integer digits, "0.000ddd"
// down to 1e-7, exponent form with an explicit sign otherwise; -0 is "0".
func appendNumber(out []byte, f float64) []byte {
	if f == 0 {
		return append(out, '0')
	}
	if f < 0 {
		out = append(out, '-')
		f = -f
	}
	e := strconv.AppendFloat(nil, f, 'e', -1, 64) // d[.ddd]e±xx
	mant, exp, _ := strings.Cut(string(e), "e")
	ds := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(ds), x+1
	switch {
	case k <= n && n <= 21:
		out = append(out, ds...)
		return append(out, strings.Repeat("0", n-k)...)
	case 0 < n && n <= 21:
		out = append(out, ds[:n]...)
		out = append(out, '.')
		return append(out, ds[n:]...)
	case -6 < n && n <= 0:
		out = append(out, "0."...)
		out = append(out, strings.Repeat("0", -n)...)
		return append(out, ds...)
	}
	out = append(out, ds[0])
	if k > 1 {
		out = append(out, '.')
		out = append(out, ds[1:]...)
	}
	out = append(out, 'e')
	if n-1 >= 0 {
		out = append(out, '+')
	}
	return strconv.AppendInt(out, int64(n-1), 10)
}
