package strictjson

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// plain marks the bytes a string holds as themselves with no check: ASCII
// from U+0020, except the quotation mark and the reverse solidus.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString checks the string whose quote is s.in[i] (RFC 8259, Section
// 7) and returns the index past its closing quote, and whether it has an
// escape.
func (s *Scanner) scanString(i int) (end int, escaped bool, err error) {
	b := s.in
	for i++; ; {
		i = skipPlain8(b, i)
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i == len(b) {
			_, err := s.fail(ErrSyntax, i, "unterminated string")
			return 0, false, err
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i, err = s.escape(i); err != nil {
				return 0, false, err
			}
		case c < 0x20:
			_, err := s.fail(ErrSyntax, i, "control character "+quoteByte(c)+" in a string")
			return 0, false, err
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 {
				_, err := s.fail(ErrUTF8, i, "")
				return 0, false, err
			}
			i += n
		}
	}
}

// skipPlain8 returns the index past the bytes of b from i that plain
// marks, eight at a time: it stops at the first group of eight that holds
// a byte under 0x20, a quotation mark, a reverse solidus or a byte from
// 0x80, or that b does not hold whole (the byte loop after it reads them).
// Each test is the one of "Bit Twiddling Hacks" (Sean Eron Anderson,
// https://graphics.stanford.edu/~seander/bithacks.html#ZeroInWord, and
// #HasLessInWord): it finds such a byte whenever there is one.
func skipPlain8(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		quote, backslash := w^(ones*'"'), w^(ones*'\\')
		special := w | (w-ones*0x20)&^w | (quote-ones)&^quote | (backslash-ones)&^backslash
		if special&highs != 0 {
			return i
		}
	}
	return i
}

// escape checks the escape whose reverse solidus is s.in[i] and returns
// the index past it: past both halves of a surrogate pair, which must be
// one (RFC 7493, Section 2.1).
func (s *Scanner) escape(i int) (int, error) {
	b := s.in
	if i+1 == len(b) {
		_, err := s.fail(ErrSyntax, i, "unterminated string")
		return 0, err
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2, nil
	case 'u':
	default:
		_, err := s.fail(ErrSyntax, i, "invalid escape")
		return 0, err
	}
	r, ok := hex4(b, i+2)
	if !ok {
		_, err := s.fail(ErrSyntax, i, "invalid \\u escape")
		return 0, err
	}
	if !utf16.IsSurrogate(r) {
		return i + 6, nil
	}
	if r < 0xdc00 && len(b) > i+7 && b[i+6] == '\\' && b[i+7] == 'u' {
		low, ok := hex4(b, i+8)
		if !ok {
			_, err := s.fail(ErrSyntax, i+6, "invalid \\u escape")
			return 0, err
		}
		if 0xdc00 <= low && low < 0xe000 {
			return i + 12, nil
		}
	}
	_, err := s.fail(ErrUTF8, i, "lone surrogate")
	return 0, err
}

// hex4 reads the four hex digits at b[i].
func hex4(b []byte, i int) (rune, bool) {
	if len(b) < i+4 {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// name reads a member name and its colon, and refuses a name the object
// has already.
func (s *Scanner) name() (Token, error) {
	start := s.pos
	if s.in[start] != '"' {
		return s.fail(ErrSyntax, start, "invalid character "+quoteByte(s.in[start])+" looking for a member name")
	}
	end, escaped, err := s.scanString(start)
	if err != nil {
		return Token{}, err
	}
	name := s.in[start+1 : end-1]
	if escaped {
		name = AppendUnquoted(nil, s.in[start:end])
	}
	if s.duplicate(name) {
		tok, err := s.fail(ErrDuplicate, start, "")
		err.(*Error).Name = string(name)
		return tok, err
	}
	s.pos = end
	s.space()
	if s.pos == len(s.in) || s.in[s.pos] != ':' {
		return s.fail(ErrSyntax, s.pos, "expected ':' after a member name")
	}
	s.pos++
	s.want = wantValue
	return Token{Kind: Name, Offset: start, End: end, Name: name}, nil
}

// duplicate reports whether the innermost object has name already, and
// adds it: to a list while the object has at most 16 names, then to a
// set.
func (s *Scanner) duplicate(name []byte) bool {
	top := &s.stack[s.depth-1]
	top.last = name
	mine := s.names[top.names:]
	switch {
	case top.set != nil:
	case len(mine) < 16:
		if s.names == nil {
			s.names = make([][]byte, 0, 16)
		}
		for _, k := range mine {
			if bytes.Equal(k, name) {
				return true
			}
		}
		s.names = append(s.names, name)
		return false
	default:
		top.set = make(map[string]struct{}, 32)
		for _, k := range mine {
			top.set[string(k)] = struct{}{}
		}
	}
	if _, dup := top.set[string(name)]; dup {
		return true
	}
	top.set[string(name)] = struct{}{}
	return false
}

// AppendUnquoted appends the value of the JSON string quoted (with its
// quotes), one a Scanner accepted, to dst: escapes decoded, surrogate
// pairs joined.
func AppendUnquoted(dst, quoted []byte) []byte {
	b := quoted[1 : len(quoted)-1]
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\\')
		if i < 0 {
			return append(dst, b...)
		}
		dst = append(dst, b[:i]...)
		b = b[i:]
		switch c := b[1]; c {
		case 'u':
			r, _ := hex4(b, 2)
			b = b[6:]
			if utf16.IsSurrogate(r) {
				low, _ := hex4(b, 2)
				r, b = utf16.DecodeRune(r, low), b[6:]
			}
			dst = utf8.AppendRune(dst, r)
			continue
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		default: // '"', '\\', '/'
			dst = append(dst, c)
		}
		b = b[2:]
	}
	return dst
}

// number reads a number (RFC 8259, Section 6) and refuses one beyond the
// double range (RFC 7493, Section 2.2).
func (s *Scanner) number() (Token, error) {
	start := s.pos
	end := scanNumber(s.in, start)
	if end == start {
		return s.fail(ErrSyntax, start, "invalid number")
	}
	// Without an exponent, only 309 integer digits or more reach past
	// the largest double, 1.8e308.
	if num := s.in[start:end]; len(num) > 308 || bytes.ContainsAny(num, "eE") {
		if _, err := strconv.ParseFloat(string(num), 64); err != nil {
			return s.fail(ErrNumber, start, "")
		}
	}
	s.pos = end
	s.afterValue()
	return Token{Kind: Number, Offset: start, End: end}, nil
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
		if i = digits(b, i+1); b[i-1] == '.' {
			return start
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		j := i + 1
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if i = digits(b, j); i == j {
			return start
		}
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
