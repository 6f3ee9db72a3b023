package strictjson

import (
	"bytes"
	"io"
)

// Kind is the kind of a Token.
type Kind uint8

// The kinds of token.
const (
	BeginObject Kind = iota + 1
	EndObject
	BeginArray
	EndArray
	Name // a member name, with its colon read
	String
	Number
	True
	False
	Null
)

// Token is one token of a text: its kind and where it is, b[Offset:End]
// (a string or name with its quotes; one byte for a bracket).
type Token struct {
	Kind        Kind
	Offset, End int
	// Name is a Name token's name, unescaped; it aliases the text when
	// the name has no escape.
	Name []byte
}

// errEOF ends a valid text.
var errEOF = io.EOF

// Scanner reads a text token by token, checking it as it goes: Next
// returns io.EOF after the one value and the white space after it, or
// an *Error at the first thing that is not strict JSON, and that error
// again on every later call. The zero Scanner is ready for Reset.
type Scanner struct {
	in    []byte
	pos   int
	want  want
	err   error
	names [][]byte // the open objects' member names, each level's from level.names
	depth int
	// The open containers, inline: a Scanner that is a local variable
	// keeps them on the goroutine's stack (a slice of an array of its own
	// would send the Scanner to the heap).
	stack [MaxDepth]level
}

// want is what the grammar allows next.
type want uint8

const (
	wantValue      want = iota // a value: at the start, after ':'
	wantValueOrEnd             // after '['
	wantNameOrEnd              // after '{'
	wantName                   // after ',' in an object
	wantCommaOrEnd             // after a value in an object or array
	wantEOF                    // after the top-level value
)

// level is an open object or array.
type level struct {
	obj   bool
	names int32  // where this object's names start in Scanner.names
	last  []byte // an object's latest member name
	set   map[string]struct{}
}

// Reset makes s read b from its start.
func (s *Scanner) Reset(b []byte) {
	s.in, s.pos, s.want, s.err, s.depth = b, 0, wantValue, nil, 0
	clear(s.names) // no hold on an earlier text
	s.names = s.names[:0]
}

// Depth is the number of objects and arrays open after the last token.
func (s *Scanner) Depth() int { return s.depth }

// Next returns the next token.
func (s *Scanner) Next() (Token, error) {
	if s.err != nil {
		return Token{}, s.err
	}
	s.space()
	if s.want == wantEOF {
		if s.pos < len(s.in) {
			return s.fail(ErrSyntax, s.pos, "data after the JSON value")
		}
		s.err = errEOF
		return Token{}, s.err
	}
	if s.pos == len(s.in) {
		return s.fail(ErrSyntax, s.pos, "unexpected end of JSON text")
	}
	c := s.in[s.pos]
	switch s.want {
	case wantValueOrEnd, wantNameOrEnd:
		if c == ']' && s.want == wantValueOrEnd || c == '}' && s.want == wantNameOrEnd {
			return s.end()
		}
		if s.want == wantNameOrEnd {
			return s.name()
		}
	case wantName:
		return s.name()
	case wantCommaOrEnd:
		return s.commaOrEnd(c)
	}
	return s.value(c)
}

// commaOrEnd reads what follows a value inside a container.
func (s *Scanner) commaOrEnd(c byte) (Token, error) {
	top := &s.stack[s.depth-1]
	switch {
	case c == ',':
		s.pos++
		if top.obj {
			s.want = wantName
		} else {
			s.want = wantValue
		}
		return s.Next()
	case c == '}' && top.obj, c == ']' && !top.obj:
		return s.end()
	}
	return s.fail(ErrSyntax, s.pos, "invalid character "+quoteByte(c)+" after a value")
}

// end closes the innermost container.
func (s *Scanner) end() (Token, error) {
	kind := EndArray
	if s.stack[s.depth-1].obj {
		kind = EndObject
	}
	s.names = s.names[:s.stack[s.depth-1].names]
	s.depth--
	s.pos++
	s.afterValue()
	return Token{Kind: kind, Offset: s.pos - 1, End: s.pos}, nil
}

func (s *Scanner) afterValue() {
	if s.depth == 0 {
		s.want = wantEOF
	} else {
		s.want = wantCommaOrEnd
	}
}

// value reads a value whose first byte is c.
func (s *Scanner) value(c byte) (Token, error) {
	start := s.pos
	switch {
	case c == '{' || c == '[':
		return s.begin(c == '{')
	case c == '"':
		end, _, err := s.scanString(start)
		if err != nil {
			return Token{}, err
		}
		s.pos = end
		s.afterValue()
		return Token{Kind: String, Offset: start, End: end}, nil
	case c == '-' || ('0' <= c && c <= '9'):
		return s.number()
	}
	for _, lit := range [...]struct {
		text string
		kind Kind
	}{{"true", True}, {"false", False}, {"null", Null}} {
		if bytes.HasPrefix(s.in[start:], []byte(lit.text)) {
			s.pos += len(lit.text)
			s.afterValue()
			return Token{Kind: lit.kind, Offset: start, End: s.pos}, nil
		}
	}
	return s.fail(ErrSyntax, start, "invalid character "+quoteByte(c)+" looking for a value")
}

// begin opens an object or array.
func (s *Scanner) begin(obj bool) (Token, error) {
	if s.depth == MaxDepth {
		return s.fail(ErrDepth, s.pos, "")
	}
	s.stack[s.depth] = level{obj: obj, names: int32(len(s.names))}
	s.depth++
	s.pos++
	kind := BeginArray
	s.want = wantValueOrEnd
	if obj {
		kind, s.want = BeginObject, wantNameOrEnd
	}
	return Token{Kind: kind, Offset: s.pos - 1, End: s.pos}, nil
}

// fail records err as the scanner's sticky error.
func (s *Scanner) fail(reason error, at int, detail string) (Token, error) {
	s.err = &Error{Err: reason, Offset: at, Path: s.path(), Detail: detail}
	return Token{}, s.err
}

func (s *Scanner) space() {
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func quoteByte(c byte) string {
	if c < 0x20 || c >= 0x7f {
		const hex = "0123456789abcdef"
		return "'\\x" + string(hex[c>>4]) + string(hex[c&0xf]) + "'"
	}
	return "'" + string(c) + "'"
}
