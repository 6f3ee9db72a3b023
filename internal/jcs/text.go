package jcs

import (
	"strconv"
	"strings"
)

// appendString writes s as RFC 8785, Section 3.2.2.2 says: quotation mark
// and reverse solidus escaped, the control characters with their short
// escape where JSON has one and \u00xx (lower-case hex) otherwise, every
// other character as itself.
func appendString(out []byte, s []byte) []byte {
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
