package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// corpus seeds the tests and FuzzAgainstEncodingJSON: grammar edges
// (carried over from transport/a2a's validJSON tests), and each refusal.
var corpus = []string{
	``, ` `, `{}`, `[]`, ` { } `, `[ ]`, `{]`, `[}`, `{"a":1}`, `{"a" : [1, 2.5, -0, -0.0e+1, 1E9, true, false, null, "s"] }`,
	`{"a":}`, `{"a"}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a":1 "b":2}`, `01`, `-`, `-a`, `1.`, `1.e3`, `1e`, `1e+`, `.5`, `+1`,
	`"\u00e9\n\t\"\\\/\b\f\r"`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"\x01\"", "\"\xff\xfe\"", `"unterminated`, `tru`, `truex`, `nul`, `null null`,
	`[[[]]]`, `{"a":{"b":{"c":[{}]}}}`, "\t\r\n[1]\n", `1 2`, `{"a":1}}`, `[1]]`, "[\"a\x7f\"]", "\ufeff{}",
	`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"x":{"a":1,"b":2,"a":1}}`, `[{"a":1},{"a":1}]`, `{"a":{"a":{"a":1}}}`,
	`1e400`, `-1e400`, `1e-400`, `1.7976931348623157e308`, `1.7976931348623159e308`, `123456789012345678901234567890`,
	`"\ud800"`, `"\udc00"`, `"\ud800x"`, `"\ud800\ud800"`, `"\ud800\u0041"`, `"\ud83d\ude00"`, `"\uD83D\uDE00"`, `{"\udead":1}`,
	"\"\xed\xa0\x80\"", "\"\xc0\xaf\"", "\"\xc3\"", "\"\xc3", "\"é😀\"",
	strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
	strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth), strings.Repeat(`{"a":`, MaxDepth) + "{}" + strings.Repeat("}", MaxDepth),
	manyNames(20, ""), manyNames(20, `,"k3":0`), manyNames(20, `,"k1\u0039":0`),
}

// manyNames is an object of n members, past the 16 names kept in a list.
func manyNames(n int, extra string) string {
	var sb strings.Builder
	sb.WriteString(`{"o":{"x":1}`)
	for i := range n {
		fmt.Fprintf(&sb, `,"k%d":%d`, i, i)
	}
	return sb.String() + extra + "}"
}

func TestRefusals(t *testing.T) {
	for in, want := range map[string]error{
		`{"a":1,"a":2}`: ErrDuplicate, `{"x":[{"b":1,"\u0062":2}]}`: ErrDuplicate, manyNames(20, `,"k1\u0039":0`): ErrDuplicate,
		strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1): ErrDepth,
		`[1e400]`: ErrNumber, `-1E+309`: ErrNumber, strings.Repeat("9", 309): ErrNumber,
		`"\ud800"`: ErrUTF8, `"\udc00\ud800"`: ErrUTF8, "\"\xff\"": ErrUTF8, "\"\xed\xa0\x80\"": ErrUTF8,
		`[1,]`: ErrSyntax, `{"a" 1}`: ErrSyntax, `"\u12g4"`: ErrSyntax, `[] []`: ErrSyntax, ``: ErrSyntax,
	} {
		if err := Check([]byte(in)); !errors.Is(err, want) {
			t.Errorf("Check(%.40q) = %v, want %v", in, err, want)
		}
	}
	for _, in := range []string{`{}`, manyNames(20, ""), `1e-400`, `123456789012345678901234567890`, `"\ud83d\ude00"`} {
		if err := Check([]byte(in)); err != nil {
			t.Errorf("Check(%.40q) = %v", in, err)
		}
	}
}

func TestErrorPath(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1,"a":2}`:                     `duplicate member "a" in the object at /`,
		`{"a":{"b":1,"c":{},"b":2}}`:        `duplicate member "b" in the object at /a`,
		`{"h":[{"p":1},{"p":1,"p":2}]}`:     `duplicate member "p" in the object at /h/[]`,
		`{"a":{"b":[{"c":{"d":0,"d":1}}]}}`: `duplicate member "d" in the object at /a/b/[]/c`,
		`{"a":[1,}`:                         `not JSON text at offset 8: invalid character '}' looking for a value`,
		`{"a":`:                             `not JSON text at offset 5: unexpected end of JSON text`,
	} {
		if err := Check([]byte(in)); err == nil || err.Error() != want {
			t.Errorf("Check(%s) = %v, want %s", in, err, want)
		}
	}
}

func TestMembers(t *testing.T) {
	in := " {\"b\" : [1, {\"c\":2}] ,\"a\\u0062\":{\"x\" : 1},\"n\":null, \"s\":\"}\"} "
	got, err := Members([]byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Member{{[]byte("b"), []byte(`[1, {"c":2}]`)}, {[]byte("ab"), []byte(`{"x" : 1}`)}, {[]byte("n"), []byte("null")}, {[]byte("s"), []byte(`"}"`)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Members = %q, want %q", got, want)
	}
	for in, want := range map[string]error{`[]`: ErrNotObject, `"x"`: ErrNotObject, `[1,]`: ErrSyntax, `{"a":1,"a":1}`: ErrDuplicate, `{"a":1} x`: ErrSyntax} {
		if _, err := Members([]byte(in), nil); !errors.Is(err, want) {
			t.Errorf("Members(%s) = %v, want %v", in, err, want)
		}
	}
}

func TestCorpusAgainstEncodingJSON(t *testing.T) {
	for _, in := range corpus {
		checkAgainstEncodingJSON(t, []byte(in))
	}
}

// FuzzAgainstEncodingJSON: what Check accepts, encoding/json accepts and
// decodes to the value the Scanner reads; what Check refuses, it refuses
// for a reason an independent reading confirms.
func FuzzAgainstEncodingJSON(f *testing.F) {
	for _, in := range corpus {
		f.Add([]byte(in))
	}
	f.Fuzz(checkAgainstEncodingJSON)
}

func checkAgainstEncodingJSON(t *testing.T, in []byte) {
	err := Check(in)
	var e *Error
	if err != nil && !errors.As(err, &e) {
		t.Fatalf("Check(%q) = %v, not an *Error", in, err)
	}
	var want any
	jsonErr := json.Unmarshal(in, &want)
	switch {
	case err == nil:
		if jsonErr != nil {
			t.Fatalf("Check(%q) accepts; encoding/json: %v", in, jsonErr)
		}
		got, err := decode(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Check(%q) accepts; Scanner reads %#v, %v; encoding/json %#v", in, got, err, want)
		}
		if d := maxDepth(in); d > MaxDepth || hasDuplicate(in) {
			t.Fatalf("Check(%q) accepts; depth %d, duplicate %v", in, d, hasDuplicate(in))
		}
	case e.Err == ErrSyntax:
		if json.Valid(in) {
			t.Fatalf("Check(%q) = %v; json.Valid accepts it", in, err)
		}
	case e.Err == ErrDepth:
		if maxDepth(in) <= MaxDepth {
			t.Fatalf("Check(%q) = %v; it nests %d", in, err, maxDepth(in))
		}
	case e.Err == ErrDuplicate:
		if !hasDuplicate(in) {
			t.Fatalf("Check(%q) = %v; encoding/json finds no duplicate", in, err)
		}
	case e.Err == ErrNumber:
		f, perr := strconv.ParseFloat(string(in[e.Offset:scanNumber(in, e.Offset)]), 64)
		if perr == nil {
			t.Fatalf("Check(%q) = %v; the number reads as %v", in, err, f)
		}
	case e.Err == ErrUTF8:
		if utf8.Valid(in) && !surrogateEscape.Match(in) {
			t.Fatalf("Check(%q) = %v; the text is UTF-8 without a surrogate escape", in, err)
		}
	default:
		t.Fatalf("Check(%q) = %v: no known reason", in, err)
	}
}

var surrogateEscape = regexp.MustCompile(`(?i)\\ud[89a-f]`)

// decode reads a value with the Scanner, as encoding/json reads into an
// any: objects as maps, numbers as float64.
func decode(in []byte) (any, error) {
	var s Scanner
	s.Reset(in)
	v, err := decodeValue(&s, in)
	if err != nil {
		return nil, err
	}
	if _, err := s.Next(); err != io.EOF {
		return nil, fmt.Errorf("after the value: %v", err)
	}
	return v, nil
}

func decodeValue(s *Scanner, in []byte) (any, error) {
	tok, err := s.Next()
	if err != nil {
		return nil, err
	}
	raw := in[tok.Offset:tok.End]
	switch tok.Kind {
	case BeginObject:
		m := map[string]any{}
		for {
			name, err := s.Next()
			if err != nil || name.Kind == EndObject {
				return m, err
			}
			v, err := decodeValue(s, in)
			if err != nil {
				return nil, fmt.Errorf("member %q: %v", name.Name, err)
			}
			m[string(name.Name)] = v
		}
	case BeginArray:
		a := []any{}
		for {
			v, err := decodeValue(s, in)
			if errors.Is(err, errEndArray) {
				return a, nil
			}
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
	case EndArray:
		return nil, errEndArray
	case String:
		return string(AppendUnquoted(nil, raw)), nil
	case Number:
		return strconv.ParseFloat(string(raw), 64)
	case True, False:
		return tok.Kind == True, nil
	case Null:
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok.Kind)
}

var errEndArray = errors.New("end of array")

// maxDepth is the deepest nesting of in, counted with encoding/json's
// tokens; 0 for text it cannot read to the end.
func maxDepth(in []byte) int {
	dec := json.NewDecoder(bytes.NewReader(in))
	depth, most := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return most
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			most = max(most, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// hasDuplicate reports whether an object of in has a name twice, read by
// encoding/json's tokens up to the first error.
func hasDuplicate(in []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(in))
	var stack []map[string]bool // nil for an array
	wantName := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if name, ok := tok.(string); ok && wantName {
			top := stack[len(stack)-1]
			if top[name] {
				return true
			}
			top[name], wantName = true, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, map[string]bool{})
			wantName = true
			continue
		case json.Delim('['):
			stack = append(stack, nil)
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		wantName = len(stack) > 0 && stack[len(stack)-1] != nil
	}
}

// TestIndexSpans: for every object text of the corpus Members accepts,
// Index gives the same members and, in opening order, the span of every
// object and array, which encoding/json's Decoder locates independently
// (InputOffset before each opening bracket's token and after its
// closing one).
func TestIndexSpans(t *testing.T) {
	for _, in := range append(corpus, ` {"a" : [ 1, {"b":[]} ], "c":{"d":"]}"} , "e":[[],[{}]]} `) {
		checkIndexSpans(t, []byte(in))
	}
}

func FuzzIndexSpans(f *testing.F) {
	for _, in := range corpus {
		f.Add([]byte(in))
	}
	f.Fuzz(checkIndexSpans)
}

func checkIndexSpans(t *testing.T, in []byte) {
	want, werr := Members(in, nil)
	got, spans, err := Index(in, nil, []Span{}, MaxDepth)
	if !reflect.DeepEqual(got, want) || fmt.Sprint(err) != fmt.Sprint(werr) {
		t.Fatalf("Index(%q) = %q, %v; Members %q, %v", in, got, err, want, werr)
	}
	if err != nil {
		return
	}
	if wantSpans := decoderSpans(t, in); !reflect.DeepEqual(spans, wantSpans) {
		t.Fatalf("Index(%q) spans %v, the Decoder's %v", in, spans, wantSpans)
	}
	// Two levels: the top-level object's and its members' own.
	_, two, _ := Index(in, nil, nil, 2)
	var want2 []Span
	for _, sp := range spans {
		if len(want2) == 0 || sp.Start >= want2[0].End || sp.End <= want2[0].End && !inside(want2[1:], sp) {
			want2 = append(want2, sp)
		}
	}
	if !reflect.DeepEqual(two, want2) {
		t.Fatalf("Index(%q, 2 levels) spans %v, want %v", in, two, want2)
	}
}

// decoderSpans locates every object and array of in with encoding/json's
// Decoder.
func decoderSpans(t *testing.T, in []byte) []Span {
	d := json.NewDecoder(bytes.NewReader(in))
	var spans []Span
	var open []int
	for {
		before := int(d.InputOffset())
		tok, err := d.Token()
		if err == io.EOF {
			return spans
		}
		if err != nil {
			t.Fatalf("Decoder on %q: %v", in, err)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			start := before + bytes.IndexAny(in[before:], "{[")
			open = append(open, len(spans))
			spans = append(spans, Span{Start: start})
		case json.Delim('}'), json.Delim(']'):
			spans[open[len(open)-1]].End = int(d.InputOffset())
			open = open[:len(open)-1]
		}
	}
}

// inside reports whether sp lies within one of spans.
func inside(spans []Span, sp Span) bool {
	for _, o := range spans {
		if o.Start < sp.Start && sp.End <= o.End {
			return true
		}
	}
	return false
}

// TestSkipPlain8: for every byte at every place in a run of plain bytes,
// skipPlain8 stops at the group of eight that holds it when plain does not
// mark it, and skips only bytes that plain marks.
func TestSkipPlain8(t *testing.T) {
	for c := range 256 {
		for at := range 24 {
			b := bytes.Repeat([]byte("a"), 24)
			b[at] = byte(c)
			for from := range 3 {
				end := skipPlain8(b, from)
				for k := from; k < end; k++ {
					if !plain[b[k]] {
						t.Fatalf("skipPlain8 over byte %#x at %d from %d = %d: skipped it", c, at, from, end)
					}
				}
				if end+8 <= len(b) && allPlain(b[end:end+8]) {
					t.Fatalf("skipPlain8 over byte %#x at %d from %d stopped at %d, before eight plain bytes", c, at, from, end)
				}
			}
		}
	}
}

func allPlain(b []byte) bool {
	for _, c := range b {
		if !plain[c] {
			return false
		}
	}
	return true
}
