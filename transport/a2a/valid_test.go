package a2a

import (
	"encoding/json"
	"strings"
	"testing"
)

var validCorpus = []string{
	``, ` `, `{}`, `[]`, ` { } `, `[ ]`, `{]`, `[}`, `{"a":1}`, `{"a" : [1, 2.5, -0, -0.0e+1, 1E9, true, false, null, "s"] }`,
	`{"a":}`, `{"a"}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a":1 "b":2}`, `01`, `-`, `-a`, `1.`, `1.e3`, `1e`, `1e+`, `.5`, `+1`,
	`"\u00e9\n\t\"\\\/\b\f\r"`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"\x01\"", "\"\xff\xfe\"", `"unterminated`, `tru`, `truex`, `nul`, `null null`,
	`[[[]]]`, `{"a":{"b":{"c":[{}]}}}`, "\t\r\n[1]\n", `1 2`, `{"a":1}}`, `[1]]`, "[\"a\x7f\"]",
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat("[", 9999) + "[1]" + strings.Repeat("]", 9999), strings.Repeat("[", 10000) + "[1]" + strings.Repeat("]", 10000),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), strings.Repeat(`{"a":`, 10000) + "{}" + strings.Repeat("}", 10000),
}

// TestValidJSONAsValid: validJSON answers as json.Valid.
func TestValidJSONAsValid(t *testing.T) {
	for _, in := range validCorpus {
		if got, want := validJSON([]byte(in)), json.Valid([]byte(in)); got != want {
			t.Errorf("validJSON(%.60q) = %v, json.Valid %v", in, got, want)
		}
	}
}

func FuzzValidJSONAsValid(f *testing.F) {
	for _, in := range validCorpus {
		if len(in) < 1000 {
			f.Add([]byte(in))
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := validJSON(in), json.Valid(in); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid %v", in, got, want)
		}
	})
}
