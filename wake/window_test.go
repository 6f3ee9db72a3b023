package wake

import (
	"testing"
	"time"
)

func at(hms string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, "2026-01-15T"+hms+"Z")
	if err != nil {
		panic(err)
	}
	return t
}

func TestWakeMinute(t *testing.T) {
	tests := []struct {
		seed string
		want int
	}{
		{"wake-vector-seed", 11}, // offline-delivery/manifest.json wakeMinuteUtc
		{"did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG", 19},
		{"did:key:z6MknGc3ocHs3zdPiJbnaaqDi58NGb4pk1Sp9WxWufuXSdxf", 36},
		// Non-ASCII: whole UTF-16 code units are hashed, not UTF-8 bytes
		// (which would give 57 and 40).
		{"é", 40},
		{"ü-agent-😀", 47}, // a surrogate pair
		{"", 1},           // the offset basis 2166136261 mod 60
	}
	for _, tt := range tests {
		if got := WakeMinute(tt.seed); got != tt.want {
			t.Errorf("WakeMinute(%q) = %d, want %d", tt.seed, got, tt.want)
		}
	}
}

func TestContains(t *testing.T) {
	tests := []struct {
		name string
		w    Window
		t    string
		want bool
	}{
		{"vector inside (od-005)", Window{Minute: 11}, "12:11:10", true},
		{"vector outside (od-004)", Window{Minute: 11}, "12:41:00", false},
		{"start is inside", Window{Minute: 11}, "12:11:00", true},
		{"last instant", Window{Minute: 11}, "12:15:59.999999999", true},
		{"end is outside", Window{Minute: 11}, "12:16:00", false},
		{"just before", Window{Minute: 11}, "12:10:59.999", false},
		{"wraps: minute 58", Window{Minute: 58}, "12:58:00", true},
		{"wraps: after the hour", Window{Minute: 58}, "13:00:30", true},
		{"wraps: last minute", Window{Minute: 58}, "13:02:59", true},
		{"wraps: end", Window{Minute: 58}, "13:03:00", false},
		{"wraps: before", Window{Minute: 58}, "12:57:59", false},
		{"length", Window{Minute: 0, Length: time.Minute}, "12:00:59", true},
		{"length end", Window{Minute: 0, Length: time.Minute}, "12:01:00", false},
		{"offset delays", Window{Minute: 11, Offset: 30 * time.Second}, "12:11:10", false},
		{"offset end", Window{Minute: 11, Offset: 30 * time.Second}, "12:16:20", true},
		{"negative offset", Window{Minute: 11, Offset: -15 * time.Minute}, "12:56:00", true},
		{"offset over an hour", Window{Minute: 11, Offset: 90 * time.Minute}, "12:41:30", true},
		{"whole hour", Window{Minute: 30, Length: time.Hour}, "12:29:59", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.w.Contains(at(tt.t)); got != tt.want {
				t.Errorf("%+v.Contains(%s) = %v, want %v", tt.w, tt.t, got, tt.want)
			}
		})
	}
}

func TestContainsOtherZones(t *testing.T) {
	// Windows are UTC minutes; a time in another zone (even one with a
	// half-hour offset) names the same instant.
	ist := time.FixedZone("IST", 5*3600+1800)
	w := Window{Minute: 11}
	if !w.Contains(at("12:11:10").In(ist)) || w.Contains(at("12:41:00").In(ist)) {
		t.Error("Contains depends on the time's location")
	}
}

func TestNext(t *testing.T) {
	tests := []struct {
		name       string
		w          Window
		t          string
		start, end string
	}{
		{"outside, later this hour", Window{Minute: 11}, "12:05:00", "12:11:00", "12:16:00"},
		{"outside, next hour", Window{Minute: 11}, "12:41:00", "13:11:00", "13:16:00"},
		{"inside: the current window", Window{Minute: 11}, "12:13:20", "12:11:00", "12:16:00"},
		{"at the end: the next one", Window{Minute: 11}, "12:16:00", "13:11:00", "13:16:00"},
		{"wrapping, inside after the hour", Window{Minute: 58}, "13:01:00", "12:58:00", "13:03:00"},
		{"wrapping, outside", Window{Minute: 58}, "13:04:00", "13:58:00", "14:03:00"},
		{"offset", Window{Minute: 59, Offset: 90 * time.Second}, "12:30:00", "13:00:30", "13:05:30"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, end := tt.w.Next(at(tt.t))
			if !start.Equal(at(tt.start)) || !end.Equal(at(tt.end)) {
				t.Errorf("%+v.Next(%s) = %s..%s, want %s..%s", tt.w, tt.t,
					start.Format(time.TimeOnly), end.Format(time.TimeOnly), tt.start, tt.end)
			}
		})
	}
}

func TestWindowValidate(t *testing.T) {
	for _, w := range []Window{{Minute: -1}, {Minute: 60}, {Minute: 3, Length: -time.Second}, {Minute: 3, Length: 999 * time.Millisecond}} {
		if w.Validate() == nil {
			t.Errorf("%+v.Validate() = nil, want an error", w)
		}
	}
	if err := WindowFor("wake-vector-seed").Validate(); err != nil {
		t.Errorf("WindowFor(vector seed).Validate() = %v", err)
	}
	if w := WindowFor("wake-vector-seed"); w != (Window{Minute: 11}) {
		t.Errorf("WindowFor(vector seed) = %+v, want minute 11", w)
	}
}
