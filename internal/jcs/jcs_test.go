package jcs

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	upstream "github.com/gowebpki/jcs"
)

// TestTransformVectors runs the upstream test vectors (testdata/input →
// testdata/output) through the copy; each output is also a fixed point.
func TestTransformVectors(t *testing.T) {
	inputs, err := filepath.Glob("testdata/input/*.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	for _, in := range inputs {
		name := filepath.Base(in)
		src, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("testdata/output", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Transform(src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
		if again, err := Transform(got); err != nil || !bytes.Equal(again, got) {
			t.Errorf("%s: canonical form is not a fixed point: %s, %v", name, again, err)
		}
	}
}

// numberPattern is the expression upstream uses for the RFC 8259 Section 6
// number grammar, which isJSONNumber replaces.
var numberPattern = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

func TestIsJSONNumber(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "-12", "0.5", "10.25", "1e5", "1E+5", "-3.5e-7", "123456789012345678901234567890"} {
		if !isJSONNumber(s) {
			t.Errorf("isJSONNumber(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"", "-", "01", "+1", ".5", "5.", "1e", "1e+", "0x10", "1_000", "Infinity", "NaN", "1.5.2", "--1", "1e5e5", " 1", "1 "} {
		if isJSONNumber(s) {
			t.Errorf("isJSONNumber(%q) = true, want false", s)
		}
	}
	// Against the regular expression on random strings over the grammar's alphabet.
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "0123456789-+.eE"
	for range 200000 {
		b := make([]byte, 1+r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		if got, want := isJSONNumber(string(b)), numberPattern.MatchString(string(b)); got != want {
			t.Fatalf("isJSONNumber(%q) = %v, the grammar says %v", b, got, want)
		}
	}
}

// TestSameAsUpstream feeds the copy and the upstream module the same inputs,
// valid and not: the canonical forms and the accept/reject decisions agree.
func TestSameAsUpstream(t *testing.T) {
	inputs := []string{
		`{"b":1,"a":[1e3,-0,0.1,"\u00e9\ud83d\ude00"],"c":{"\u20ac":true,"\ud83d\ude00":null}}`,
		`{"a":1,"a":2}`, `"\udc00"`, `"\ud800x"`, `"\ud800\u0041"`, "\"\xff\"", `[01]`, `[1.]`, `[-]`,
		`{"x":"\/\b\f\n\r\t\"\\"}`, `{"x":"\q"}`, `[1e400]`, `[123456789012345678901234567890]`, `{"a" 1}`,
		`{"a":1,}`, `[1,2`, `"abc`, "\"a\x01\"", `true`, `nul`, `[5e-324, 1.7976931348623157e308]`,
	}
	r := rand.New(rand.NewPCG(3, 4))
	const alphabet = `{}[]":,0123456789.-eE \u00d8ab`
	for range 20000 {
		var sb strings.Builder
		for range 1 + r.IntN(24) {
			sb.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		inputs = append(inputs, sb.String())
	}
	for _, in := range inputs {
		got, err := Transform([]byte(in))
		want, uerr := upstream.Transform([]byte(in))
		if (err == nil) != (uerr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("Transform(%q) = %q, %v; upstream %q, %v", in, got, err, want, uerr)
		}
	}
}
