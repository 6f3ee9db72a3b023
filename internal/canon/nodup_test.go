package canon

import (
	"strings"
	"testing"
)

func TestNoDuplicates(t *testing.T) {
	good := []string{`{}`, `[]`, `1`, `{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}`, `{"a":{"b":{"c":[[{"d":1,"e":2}]]}}}`,
		`[{"a":1},{"a":1}]`, `{"a":[],"b":{}}`}
	for _, s := range good {
		if err := NoDuplicates([]byte(s)); err != nil {
			t.Errorf("NoDuplicates(%s) = %v", s, err)
		}
	}
	bad := map[string]string{
		`{"a":1,"a":2}`:                               `duplicate member "a" in the object at /`,
		`{"a":{"b":1,"c":{},"b":2}}`:                  `duplicate member "b" in the object at /a`,
		`{"h":[{"p":1},{"p":1,"p":2}]}`:               `duplicate member "p" in the object at /h/[]`,
		`{"x":[1,2],"x":[3]}`:                         `duplicate member "x" in the object at /`,
		`{"a":{"b":[{"c":{"d":0,"d":1}}]}}`:           `duplicate member "d" in the object at /a/b/[]/c`,
		`{"jsonrpc":"2.0","method":"a","method":"b"}`: `duplicate member "method"`,
		`{"a":`:          "unexpected end of JSON text",
		`{"a":"\ud800"}`: "string is not Unicode text",
		`[1e400]`:        "number outside the IEEE 754 double range",
		strings.Repeat("[", 65) + strings.Repeat("]", 65): "nested deeper than 64 levels",
	}
	for s, want := range bad {
		err := NoDuplicates([]byte(s))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NoDuplicates(%s) = %v, want %q", s, err, want)
		}
	}
}
