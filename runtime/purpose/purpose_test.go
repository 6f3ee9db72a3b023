package purpose

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, p string
		want       bool
	}{
		{"comms:message", "comms:message", true},
		{"comms:message", "comms:receipt", false},
		{"comms:message", "comms:message:x", false},
		{"action:*", "action:capture", true},
		{"action:*", "action:hold:extend", true},
		{"action:*", "action", false},
		{"action:*", "action:", false},
		{"action:*", "actions:capture", false},
		{"*", "anything:at:all", true},
		{"", "", true}, // exact match of the empty pattern; CheckPattern rejects it
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.p); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.p, got, tt.want)
		}
	}
}

func TestValid(t *testing.T) {
	tests := []struct {
		p    string
		want bool
	}{
		{"comms:message", true},
		{"torpor:policy", true},
		{"a.b-c_d:e2", true},
		{"", false},
		{"Comms:message", false},
		{"comms::message", false},
		{":comms", false},
		{"comms message", false},
		{"comms:*", false},
	}
	for _, tt := range tests {
		if got := Valid(tt.p); got != tt.want {
			t.Errorf("Valid(%q) = %v, want %v", tt.p, got, tt.want)
		}
	}
}

func TestParseSet(t *testing.T) {
	got, err := ParseSet(" comms:message, action:* ,*,")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Set{"comms:message", "action:*", "*"}, got); diff != "" {
		t.Errorf("ParseSet (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"action*", "a:*:b", "UPPER", "a:**"} {
		if _, err := ParseSet(bad); err == nil {
			t.Errorf("ParseSet(%q): nil error", bad)
		}
	}
	if !(Set{"comms:*"}).Match("comms:receipt") || (Set{}).Match("x") {
		t.Error("Set.Match wrong")
	}
}
