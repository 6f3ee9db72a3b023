package jcs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	upstream "github.com/gowebpki/jcs"

	"github.com/torpor-dev/torpor/internal/strictjson"
)

// TestNumbers holds the examples of RFC 8785, Appendix B: IEEE 754 bit
// patterns and their canonical text.
func TestNumbers(t *testing.T) {
	for _, tt := range []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	} {
		f := math.Float64frombits(tt.bits)
		if got := string(appendNumber(nil, f)); got != tt.want {
			t.Errorf("%#016x: got %s, want %s", tt.bits, got, tt.want)
		}
		in := strconv.FormatFloat(f, 'g', -1, 64)
		if got, err := Transform([]byte(in)); err != nil || string(got) != tt.want {
			t.Errorf("Transform(%s) = %s, %v; want %s", in, got, err, tt.want)
		}
	}
}

// TestRandomNumbersMatchUpstream compares the number form with
// github.com/gowebpki/jcs on random finite doubles.
func TestRandomNumbersMatchUpstream(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		in := []byte(strconv.FormatFloat(f, 'e', -1, 64))
		want, err := upstream.Transform(in)
		if err != nil {
			t.Fatalf("upstream %s: %v", in, err)
		}
		if got, err := Transform(in); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: got %s, %v; upstream %s", in, got, err, want)
		}
	}
}

// TestRandomDocumentsMatchUpstream compares whole documents: nested
// objects with names outside the BMP (UTF-16 order differs from UTF-8's),
// escapes, control characters and white space.
func TestRandomDocumentsMatchUpstream(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		in := randomValue(r, 4)
		want, err := upstream.Transform(in)
		if err != nil {
			t.Fatalf("upstream %s: %v", in, err)
		}
		got, err := Transform(in)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("document %d %s:\n got %s, %v\nwant %s", i, in, got, err, want)
		}
	}
}

var names = []string{"a", "b", "aa", "\u20ac", "\U0001F600", "\ufb33", "\r", "1", "", "é", "\u0080"}

func randomValue(r *rand.Rand, depth int) []byte {
	switch k := r.IntN(7); {
	case depth > 0 && k == 0:
		var parts []string
		for j, n := range r.Perm(len(names))[:r.IntN(5)] {
			parts = append(parts, strings.Repeat(" ", j)+quote(names[n])+" :\n"+string(randomValue(r, depth-1)))
		}
		return []byte("{" + strings.Join(parts, ",") + "}")
	case depth > 0 && k == 1:
		var parts []string
		for range r.IntN(4) {
			parts = append(parts, string(randomValue(r, depth-1)))
		}
		return []byte("[ " + strings.Join(parts, ", ") + "\t]")
	case k == 2:
		return []byte(strconv.FormatFloat(r.NormFloat64()*math.Pow(10, float64(r.IntN(40)-20)), 'g', -1, 64))
	case k == 3:
		return []byte([]string{"true", "false", "null"}[r.IntN(3)])
	case k == 4: // a string without escapes, or with only \r's
		return []byte(quote(names[r.IntN(len(names))]))
	default:
		return []byte(fmt.Sprintf(`"\u%04x x\"\\\/\t%s\ud83d\ude00"`, r.IntN(0xd800), strings.ReplaceAll(names[r.IntN(len(names))], "\r", `\r`)))
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestRefused lists input Transform refuses: what is not one JSON text, and
// what has no canonical form (RFC 8785, Section 3.1: I-JSON).
func TestRefused(t *testing.T) {
	for _, in := range []string{
		``, ` `, `{`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `01`, `1.`, `.5`, `-`, `1e`, `+1`,
		`1e400`, `-1e400`, `NaN`, `tru`, `nul`, `"abc`, "\"a\x01\"", `"\x"`, `"\u12"`, `"\u12g4"`,
		`"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, "\"\xff\"", "\"\xc3\"", `{"a":1,"a":2}`,
		`{"a":{"b":1,"b":1}}`, `1 2`, `[] x`,
	} {
		if got, err := Transform([]byte(in)); err == nil {
			t.Errorf("Transform(%q) = %s, want an error", in, got)
		}
	}
}

// TestExample is the example of RFC 8785, Section 3.2.2.
func TestExample(t *testing.T) {
	in := `{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	want := `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],` +
		`"string":"€$\u000f\nA'B\"\\\\\"/"}`
	got, err := Transform([]byte(in))
	if err != nil || string(got) != want {
		t.Errorf("got %s, %v\nwant %s", got, err, want)
	}
}

// FuzzAgainstUpstream is the differential test of this hand-written
// canonicaliser against github.com/gowebpki/jcs (a test dependency only):
// where both accept a text they must write the same bytes, and the
// canonical form must be its own canonical form; this package may refuse
// only what upstream refuses too or what nests deeper than
// strictjson.MaxDepth (upstream allows 10,000). Seeds: testdata/rfc8785.txt
// (RFC 8785's examples), the Governed Objects of the Atom vectors in
// testdata/vectors/atom, and generated documents.
func FuzzAgainstUpstream(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(checkAgainstUpstream)
}

func checkAgainstUpstream(t *testing.T, in []byte) {
	got, err := Transform(in)
	want, uerr := upstream.Transform(in)
	var e *strictjson.Error
	switch {
	case err == nil && uerr == nil:
		if !bytes.Equal(got, want) {
			t.Fatalf("Transform(%q)\n = %s\nupstream %s", in, got, want)
		}
		if again, err := Transform(got); err != nil || !bytes.Equal(again, got) {
			t.Fatalf("Transform(%q) = %s, not canonical: again %s, %v", in, got, again, err)
		}
	case err == nil:
		t.Fatalf("Transform(%q) = %s; upstream refuses: %v", in, got, uerr)
	case uerr == nil:
		if !errors.As(err, &e) || e.Err != strictjson.ErrDepth {
			t.Fatalf("Transform(%q): %v; upstream accepts: %s", in, err, want)
		}
	}
}

// seeds returns the fuzz seeds: the lines of testdata/rfc8785.txt, the
// objects of the Atom vectors, and generated documents.
func seeds(tb testing.TB) [][]byte {
	b, err := os.ReadFile("testdata/rfc8785.txt")
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	for _, line := range strings.Split(string(b), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, []byte(line))
		}
	}
	vectors, _ := filepath.Glob("../../testdata/vectors/atom/*.json")
	if len(vectors) == 0 {
		tb.Fatal("no Atom vectors in ../../testdata/vectors/atom")
	}
	for _, name := range vectors {
		v, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) == nil && m["object"] != nil {
			out = append(out, m["object"])
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 20 {
		out = append(out, randomValue(r, 3))
	}
	if len(out) < 60 {
		tb.Fatalf("%d seeds, want the RFC's, the vectors' and generated ones", len(out))
	}
	return out
}

// TestAppend: Append appends what Transform returns.
func TestAppend(t *testing.T) {
	in := []byte(`{"b": [1, "\u00e9"], "a": {"d": 1e3, "c": null}}`)
	want, err := Transform(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Append([]byte("prefix:"), in)
	if err != nil || string(got) != "prefix:"+string(want) {
		t.Errorf("Append(prefix, %s) = %s, %v; want prefix:%s", in, got, err, want)
	}
}
