// Package strictjson is the module's one strict reader of JSON text. The
// relay and the device must read the same bytes alike (a body the relay
// stores as one thing and the agent reads as another is a smuggling
// channel), so transport/a2a, internal/canon and internal/jcs all read
// through it.
//
// A text is accepted only if it is one JSON value (RFC 8259, Section 2,
// white space around it allowed) and an I-JSON message (RFC 7493):
//
//   - no object has two members of the same name, at any depth, names
//     compared after unescaping (RFC 7493, Section 2.3; RFC 8259, Section
//     8.3): encoding/json keeps the last of two, another reader the first;
//   - no more than MaxDepth objects and arrays are open at once;
//   - strings are valid UTF-8 (RFC 8259, Section 8.1), and no \u escape
//     leaves a surrogate unpaired (RFC 7493, Section 2.1);
//   - numbers lie within the IEEE 754 double range (RFC 7493, Section
//     2.2): a number whose magnitude rounds beyond the largest finite
//     double (1e400) is refused. Numbers with more digits than a double
//     holds (0.1, 333333333.33333329, integers past 2^53) are accepted and
//     mean the nearest double: Section 2.2 says SHOULD NOT, not MUST NOT,
//     the JSON Canonicalization Scheme (RFC 8785, Section 3.2.2.3) defines
//     their form on that double, and refusing them would refuse almost
//     every decimal fraction. A number that underflows (1e-400) is the
//     double it rounds to, zero, as strconv and encoding/json read it.
//
// Anything this package accepts, encoding/json accepts and decodes to the
// same value (FuzzAgainstEncodingJSON checks it); what it refuses, it
// refuses with one of the Err* reasons below, in an *Error.
package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// MaxDepth is the deepest nesting of objects and arrays a text may have.
// An A2A request with a Governed Object nests about ten levels; 64 leaves a
// payload room and keeps every walk over the text bounded.
const MaxDepth = 64

// The reasons of a refusal, the Err field of an *Error.
var (
	// ErrSyntax is returned for text that is not one JSON value (RFC 8259).
	ErrSyntax = errors.New("not JSON text")
	// ErrDuplicate is returned for an object with two members of one name.
	ErrDuplicate = errors.New("duplicate member")
	// ErrDepth is returned for nesting deeper than MaxDepth.
	ErrDepth = fmt.Errorf("nested deeper than %d levels", MaxDepth)
	// ErrNumber is returned for a number beyond the IEEE 754 double range.
	ErrNumber = errors.New("number outside the IEEE 754 double range")
	// ErrUTF8 is returned for a string that is not valid UTF-8 or has a
	// lone surrogate in a \u escape.
	ErrUTF8 = errors.New("string is not Unicode text")
	// ErrNotObject is returned by Members for a valid text that is not an
	// object.
	ErrNotObject = errors.New("not a JSON object")
)

// Error is a refusal: why (Err, one of the Err* values), where (Offset, a
// byte offset into the text; Path, the member names of the open objects
// from the top, "[]" for an array element) and, for ErrDuplicate, the
// member's name.
type Error struct {
	Err    error
	Offset int
	Path   string
	Name   string // the name twice, for ErrDuplicate
	Detail string // what was found, for ErrSyntax
}

func (e *Error) Error() string {
	switch {
	case e.Err == ErrDuplicate:
		return fmt.Sprintf("duplicate member %q in the object at %s", e.Name, e.Path)
	case e.Detail != "":
		return fmt.Sprintf("%v at offset %d: %s", e.Err, e.Offset, e.Detail)
	}
	return fmt.Sprintf("%v at offset %d", e.Err, e.Offset)
}

func (e *Error) Unwrap() error { return e.Err }

// Check returns nil if b is one strict JSON text, else an *Error.
func Check(b []byte) error {
	var s Scanner
	s.Reset(b)
	for {
		if _, err := s.Next(); err != nil {
			return s.done(err)
		}
	}
}

// Member is one member of an object: its name, unescaped, and its value's
// bytes as they are in the text, without the white space around them.
// Both may alias the text.
type Member struct {
	Name  []byte
	Value []byte
}

// Members checks b as Check does and returns the members of its top-level
// object in their order, appended to dst. A valid text that is not an
// object returns an *Error with ErrNotObject.
func Members(b []byte, dst []Member) ([]Member, error) {
	dst, _, err := Index(b, dst, nil, 0)
	return dst, err
}

// Span is where one object or array of a text is: text[Start:End], from
// its opening bracket to just past its closing one.
type Span struct{ Start, End int }

// Index is Members that also appends to spans the Span of every object
// and array at most levels deep (the top-level object is 1) in the order
// they open, so by Start: in the same pass, a reader of the members'
// values learns where each nested value ends without reading it again.
// On an error the spans appended are incomplete.
func Index(b []byte, dst []Member, spans []Span, levels int) ([]Member, []Span, error) {
	// The open objects' names, in a buffer that outlives the call
	// (cleared: no hold on b), for a Scanner's own goes to the heap.
	np := namesPool.Get().(*[][]byte)
	var s Scanner
	s.names = (*np)[:0]
	dst, spans, err := s.index(b, dst, spans, levels)
	names := s.names[:cap(s.names)]
	clear(names)
	*np = names[:0]
	namesPool.Put(np)
	return dst, spans, err
}

var namesPool = sync.Pool{New: func() any { return new([][]byte) }}

// index is Index with s.
func (s *Scanner) index(b []byte, dst []Member, spans []Span, levels int) ([]Member, []Span, error) {
	s.Reset(b)
	tok, err := s.Next()
	if err != nil {
		return dst, spans, s.done(err)
	}
	if tok.Kind != BeginObject {
		if err := Check(b); err != nil {
			return dst, spans, err
		}
		return dst, spans, &Error{Err: ErrNotObject, Offset: tok.Offset}
	}
	var open [MaxDepth]int32 // the open containers' entries in spans
	if levels > 0 {
		open[0], spans = int32(len(spans)), append(spans, Span{Start: tok.Offset})
	}
	value := -1 // where the value of the member being read starts
	for {
		tok, err := s.Next()
		if err != nil {
			return dst, spans, s.done(err)
		}
		depth := s.Depth()
		if depth < levels || depth == levels && (tok.Kind == BeginObject || tok.Kind == BeginArray) {
			spans = recordSpan(spans, &open, tok, depth)
		}
		switch {
		case depth == 1 && tok.Kind == Name:
			// The name from b, not tok.Name: what comes from the
			// Scanner would take it to the heap (escape analysis does
			// not tell its fields apart).
			name := b[tok.Offset+1 : tok.End-1]
			if bytes.IndexByte(name, '\\') >= 0 {
				name = AppendUnquoted(nil, b[tok.Offset:tok.End])
			}
			dst = append(dst, Member{Name: name})
			value = -1
		case depth == 1 || (depth == 2 && value < 0 && (tok.Kind == BeginObject || tok.Kind == BeginArray)):
			if value < 0 {
				value = tok.Offset
			}
			if depth == 1 {
				dst[len(dst)-1].Value = b[value:tok.End]
			}
		}
	}
}

// recordSpan opens a Span for a token that opens a container, now at
// depth, and closes the innermost one for a token that ends it.
func recordSpan(spans []Span, open *[MaxDepth]int32, tok Token, depth int) []Span {
	switch tok.Kind {
	case BeginObject, BeginArray:
		open[depth-1] = int32(len(spans))
		spans = append(spans, Span{Start: tok.Offset})
	case EndObject, EndArray:
		spans[open[depth]].End = tok.End
	}
	return spans
}

// done turns the io.EOF that ends a valid text into nil.
func (s *Scanner) done(err error) error {
	if err == errEOF {
		return nil
	}
	return err
}

// path is the member names of the open containers, as Error.Path.
func (s *Scanner) path() string {
	if s.depth <= 1 {
		return "/"
	}
	var sb strings.Builder
	for _, parent := range s.stack[:s.depth-1] {
		sb.WriteByte('/')
		if parent.obj {
			sb.Write(parent.last)
		} else {
			sb.WriteString("[]")
		}
	}
	return sb.String()
}
