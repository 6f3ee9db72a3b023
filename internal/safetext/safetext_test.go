package safetext

import (
	"fmt"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	refused := map[string]string{
		"right-to-left override":  "invoice\u202Egpj.exe",
		"left-to-right embedding": "a\u202Ab",
		"pop directional":         "a\u202Cb",
		"first strong isolate":    "a\u2068b",
		"pop isolate":             "a\u2069b",
		"zero-width space":        "pump\u200B1",
		"zero-width joiner":       "pump\u200D1",
		"right-to-left mark":      "pump\u200F1",
		"byte order mark":         "\uFEFFpump",
		"newline":                 "pump\n1",
		"escape":                  "pump\x1b[31m",
		"C1 control":              "pump\u0085",
		"line separator":          "pump\u2028",
		"not UTF-8":               "pump\xff",
	}
	for name, s := range refused {
		if err := Check("name", s); err == nil || !strings.HasPrefix(err.Error(), "name: ") {
			t.Errorf("%s: Check(%q) = %v, want refused", name, s, err)
		}
		if got := Show(s); Check("shown", got) != nil {
			t.Errorf("%s: Show(%q) = %q still hides characters", name, s, got)
		}
	}
	for _, s := range []string{"", "pump 1", "Pumpe Süd", "ポンプ", "مضخة", "pump-1 (east) ✓", "\uFFFD"} {
		if err := Check("name", s); err != nil {
			t.Errorf("Check(%q) = %v, want accepted", s, err)
		}
		if got := Show(s); got != s {
			t.Errorf("Show(%q) = %q, want it unchanged", s, got)
		}
	}
	if got, want := Show("invoice\u202Egpj.exe"), "invoice<U+202E>gpj.exe"; got != want {
		t.Errorf("Show = %q, want %q", got, want)
	}
}

func TestWriter(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(Writer(&b), "NAME\tSTATE\n%s\tawake\r\n", "pump\u202E1")
	if got, want := b.String(), "NAME\tSTATE\npump<U+202E>1\tawake\n"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"ééé", 5, "éé"},               // not in the middle of the third é
		{"a\u202eb", 20, "a<U+202E>b"}, // shown, then counted
		{"a\u202eb", 4, "a<U+"},
		{"x", 0, ""},
	} {
		if got := Clip(tc.in, tc.n); got != tc.want || len(got) > tc.n {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
