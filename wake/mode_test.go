package wake

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMode(t *testing.T) {
	for _, m := range Modes {
		got, err := ParseMode(string(m))
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
		if !m.Valid() {
			t.Errorf("%q.Valid() = false", m)
		}
	}
	for _, s := range []string{"", "Sleep", "hourly-wake", "always"} {
		_, err := ParseMode(s)
		if err == nil || !strings.Contains(err.Error(), "hourly_wake") {
			t.Errorf("ParseMode(%q) = %v, want an error listing the modes", s, err)
		}
		if Mode(s).Valid() {
			t.Errorf("Mode(%q).Valid() = true", s)
		}
	}
}

func TestQueues(t *testing.T) {
	want := map[Mode]bool{AlwaysOn: false, Session: false, HourlyWake: true, Sleep: true}
	for m, q := range want {
		if m.Queues() != q {
			t.Errorf("%s.Queues() = %v, want %v", m, !q, q)
		}
	}
}

func TestEvaluate(t *testing.T) {
	w := WindowFor("wake-vector-seed")
	tests := []struct {
		name string
		mode Mode
		now  string
		want Verdict
	}{
		{"od-001 always_on", AlwaysOn, "12:00:00", Verdict{Accept: true}},
		{"od-002 session", Session, "12:00:00", Verdict{Accept: true}},
		{"od-003 sleep", Sleep, "12:00:00", Verdict{Queue: true}},
		{"od-004 hourly_wake outside", HourlyWake, "12:41:00", Verdict{Queue: true, RetryAfter: 1800}},
		{"od-005 hourly_wake inside", HourlyWake, "12:11:10", Verdict{Accept: true}},
		{"invalid mode", Mode("bogus"), "12:00:00", Verdict{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Evaluate(tt.mode, w, at(tt.now), zeros{})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Evaluate(%s, %s) (-want +got):\n%s", tt.mode, tt.now, diff)
			}
		})
	}
}
