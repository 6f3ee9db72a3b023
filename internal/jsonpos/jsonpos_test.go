package jsonpos

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestDescribe(t *testing.T) {
	for _, tt := range []struct{ doc, want string }{
		{`nope`, "line 1, column 2: invalid character 'o' in literal null (expecting 'u')"},
		{"{\n  \"a\": 1,\n  \"b\": ]\n}", "line 3, column 8: invalid character ']' looking for beginning of value"},
		{"[1,\n2,", "line 2, column 2: unexpected end of JSON input"},
	} {
		var v any
		err := json.Unmarshal([]byte(tt.doc), &v)
		if got := Describe([]byte(tt.doc), err); got != tt.want {
			t.Errorf("Describe(%q) = %q, want %q", tt.doc, got, tt.want)
		}
	}
	if got := Describe(nil, errors.New("other")); got != "other" {
		t.Errorf("Describe(other error) = %q", got)
	}
}
