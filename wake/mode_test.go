package wake

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

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
	w := WindowFor("wake-vector-seed") // minute 11, five minutes
	short := Window{Minute: 11, Length: time.Minute}
	tests := []struct {
		name   string
		s      Schedule
		linked bool
		now    string
		want   Verdict // with zeros: the earliest second of the jitter
		maxRA  int     // RetryAfter < maxRA whatever the draw
	}{
		{"od-001 always_on", Schedule{Mode: AlwaysOn, Window: w}, true, "12:00:00", Verdict{Accept: true}, 0},
		{"od-002 session", Schedule{Mode: Session, Window: w}, true, "12:00:00", Verdict{Accept: true}, 0},
		{"od-003 sleep", Schedule{Mode: Sleep, Window: w}, true, "12:00:00", Verdict{Queue: true}, 0},
		{"od-004 hourly_wake outside", Schedule{Mode: HourlyWake, Window: w}, true, "12:41:00", Verdict{Queue: true, RetryAfter: 1800}, 2100},
		{"od-005 hourly_wake inside", Schedule{Mode: HourlyWake, Window: w}, true, "12:11:10", Verdict{Accept: true}, 0},
		{"always_on offline", Schedule{Mode: AlwaysOn, Window: w}, false, "12:00:00", Verdict{Queue: true}, 0},
		{"session offline", Schedule{Mode: Session, Window: w}, false, "12:00:00", Verdict{}, 0},
		{"hourly_wake offline inside", Schedule{Mode: HourlyWake, Window: w}, false, "12:12:00", Verdict{Queue: true, RetryAfter: 1}, 240},
		{"hourly_wake offline, wake announced next hour", Schedule{Mode: HourlyWake, Window: short, NextWake: at("13:11:00")}, false, "12:11:20", Verdict{Queue: true, RetryAfter: 3580}, 3640},
		{"hourly_wake linked ignores the announced wake", Schedule{Mode: HourlyWake, Window: short, NextWake: at("14:11:00")}, true, "12:41:00", Verdict{Queue: true, RetryAfter: 1800}, 1860},
		{"hourly_wake announced wake passed", Schedule{Mode: HourlyWake, Window: short, NextWake: at("11:11:00")}, false, "12:41:00", Verdict{Queue: true, RetryAfter: 1800}, 1860},
		{"sleep, operator wake in 2h, short window", Schedule{Mode: Sleep, Window: short, NextWake: at("14:00:00")}, false, "12:00:00", Verdict{Queue: true, RetryAfter: 7200}, 7260},
		{"sleep, operator wake in 2h, default window", Schedule{Mode: Sleep, Window: w, NextWake: at("14:00:00")}, true, "12:00:00", Verdict{Queue: true, RetryAfter: 7200}, 7500},
		{"sleep, operator wake passed", Schedule{Mode: Sleep, Window: short, NextWake: at("11:00:00")}, false, "12:00:00", Verdict{Queue: true}, 0},
		{"invalid mode", Schedule{Mode: Mode("bogus"), Window: w}, true, "12:00:00", Verdict{}, 0},
	}
	rnd := rand.NewChaCha8([32]byte{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Evaluate(tt.s, tt.linked, at(tt.now), zeros{})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Evaluate(%+v, linked %v, %s) (-want +got):\n%s", tt.s, tt.linked, tt.now, diff)
			}
			// Decide is the same answer without the Retry-After.
			if d, want := tt.s.Decide(tt.linked, at(tt.now)), (Verdict{Accept: tt.want.Accept, Queue: tt.want.Queue}); d != want {
				t.Errorf("Decide(linked %v, %s) = %+v, want %+v", tt.linked, tt.now, d, want)
			}
			for range 200 {
				v := Evaluate(tt.s, tt.linked, at(tt.now), rnd)
				if v.Accept != tt.want.Accept || v.Queue != tt.want.Queue || (v.RetryAfter == 0) != (tt.want.RetryAfter == 0) ||
					v.RetryAfter != 0 && (v.RetryAfter < tt.want.RetryAfter || v.RetryAfter >= tt.maxRA) {
					t.Fatalf("Evaluate(%+v, linked %v, %s) = %+v, want %+v with RetryAfter in [%d, %d)", tt.s, tt.linked, tt.now, v, tt.want, tt.want.RetryAfter, tt.maxRA)
				}
			}
		})
	}
}
