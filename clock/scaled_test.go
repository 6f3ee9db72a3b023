package clock_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/clock/clocktest"
)

var t0 = time.Date(2026, 12, 2, 15, 20, 0, 0, time.UTC)

func fired(t clock.Timer) bool {
	select {
	case <-t.C():
		return true
	default:
		return false
	}
}

// TestUnscaled: a timeout that bounds a network round trip keeps its real
// length under a time scale when made on clock.Unscaled; on the scaled
// clock it shrinks by the factor.
func TestUnscaled(t *testing.T) {
	base := clocktest.New(t0)
	sc, err := clock.NewScaled(base, 240)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   clock.Clock
		want clock.Clock
	}{
		{"scaled", sc, base},
		{"fake", base, base},
		{"real", clock.Real, clock.Real},
		{"nil", nil, nil},
	}
	for _, tt := range tests {
		if got := clock.Unscaled(tt.in); got != tt.want {
			t.Errorf("Unscaled(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := sc.(*clock.Scaled).Base(); got != base {
		t.Errorf("Base() = %v, want the base clock", got)
	}

	scaledT := sc.NewTimer(3 * time.Second)
	realT := clock.Unscaled(sc).NewTimer(3 * time.Second)
	base.Advance(13 * time.Millisecond) // 3 s of scaled time, 240 times faster
	if !fired(scaledT) || fired(realT) {
		t.Fatal("after 12.5 ms of real time: want the scaled timer fired, the unscaled one not")
	}
	base.Advance(3 * time.Second)
	if !fired(realT) {
		t.Fatal("the unscaled timer did not fire after 3 s of real time")
	}
}

func TestCheckScale(t *testing.T) {
	tests := []struct {
		in float64
		ok bool
	}{
		{1, true}, {1.5, true}, {60, true}, {100000, true},
		{math.NaN(), false}, {math.Inf(1), false}, {math.Inf(-1), false},
		{0, false}, {-1, false}, {-60, false}, {0.5, false}, {0.999999, false},
		{100000.5, false}, {1e9, false}, {math.MaxFloat64, false},
	}
	for _, tt := range tests {
		err := clock.CheckScale(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("CheckScale(%v) = %v, want ok=%v", tt.in, err, tt.ok)
		}
		_, err = clock.NewScaled(clocktest.New(t0), tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("NewScaled(%v) = %v, want ok=%v", tt.in, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "want a number from 1 (real time) to 100000") {
			t.Errorf("NewScaled(%v) = %v, want the range in the error", tt.in, err)
		}
	}
}

func TestParseScale(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr string
	}{
		{"1", 1, ""},
		{"3600", 3600, ""},
		{"1e5", 100000, ""},
		{"0", 0, "time scale 0 is out of range: want a number from 1 (real time) to 100000"},
		{"-2", 0, "time scale -2 is out of range"},
		{"0.5", 0, "time scale 0.5 is out of range"},
		{"1e9", 0, "time scale 1e+09 is out of range"},
		{"NaN", 0, "time scale NaN is out of range"},
		{"Inf", 0, "time scale +Inf is out of range"},
		{"fast", 0, `time scale "fast" is not a number: want a number from 1 (real time) to 100000`},
		{"", 0, `time scale "" is not a number`},
	}
	for _, tt := range tests {
		got, err := clock.ParseScale(tt.in)
		switch {
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("ParseScale(%q) = %v, %v, want %v", tt.in, got, err, tt.want)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ParseScale(%q) = %v, %v, want error %q", tt.in, got, err, tt.wantErr)
		}
	}
}

// TestScaledNowNeverWraps: at the largest factor a Duration of scaled time
// overflows after about 25.6 hours of base time. Now must stop there, not
// wrap around to some 292 years in the past.
func TestScaledNowNeverWraps(t *testing.T) {
	base := clocktest.New(t0)
	sc, err := clock.NewScaled(base, clock.MaxScale)
	if err != nil {
		t.Fatal(err)
	}
	base.Advance(time.Hour)
	if got, want := sc.Now(), t0.Add(clock.MaxScale*time.Hour); !got.Equal(want) {
		t.Fatalf("after 1 h at factor %d: Now() = %v, want %v", clock.MaxScale, got, want)
	}
	last := t0.Add(math.MaxInt64)
	prev := sc.Now()
	for _, d := range []time.Duration{25 * time.Hour, time.Hour, 24 * time.Hour, 365 * 24 * time.Hour} {
		base.Advance(d)
		now := sc.Now()
		if now.Before(prev) || now.After(last) {
			t.Fatalf("after %v more: Now() = %v, want between %v and %v", d, now, prev, last)
		}
		prev = now
	}
	if !prev.Equal(last) {
		t.Errorf("a year on: Now() = %v, want it stopped at %v", prev, last)
	}
	// Base time going backwards clamps the other way.
	base.Set(t0.Add(-300 * 24 * time.Hour))
	if got, first := sc.Now(), t0.Add(math.MinInt64); !got.Equal(first) {
		t.Errorf("base 300 days before the epoch: Now() = %v, want %v", got, first)
	}
}

// TestScaledAtSharedEpoch: two scaled clocks made at different moments
// with the same factor and epoch show the same time, scaled = epoch +
// (base − epoch) × factor; clocks made without an epoch disagree by the
// time between their making times the factor.
func TestScaledAtSharedEpoch(t *testing.T) {
	base := clocktest.New(t0)
	epoch := t0.Add(-2 * time.Second)
	first, err := clock.NewScaledAt(base, 100, epoch)
	if err != nil {
		t.Fatal(err)
	}
	own, _ := clock.NewScaled(base, 100)
	base.Advance(30 * time.Second) // a guest boots
	second, err := clock.NewScaledAt(base, 100, epoch)
	if err != nil {
		t.Fatal(err)
	}
	want := epoch.Add(32 * time.Second * 100)
	if got := first.Now(); !got.Equal(want) {
		t.Errorf("first.Now() = %v, want %v", got, want)
	}
	if got := second.Now(); !got.Equal(want) {
		t.Errorf("second.Now() = %v, want %v", got, want)
	}
	if got, want := own.Now(), t0.Add(30*time.Second*100); !got.Equal(want) {
		t.Errorf("the clock without an epoch: Now() = %v, want %v", got, want)
	}
	if got := second.(*clock.Scaled).Epoch(); !got.Equal(epoch) {
		t.Errorf("Epoch() = %v, want %v", got, epoch)
	}
	// Before a future epoch, scaled time runs fast and behind base time.
	ahead, _ := clock.NewScaledAt(base, 10, base.Now().Add(time.Minute))
	if got, want := ahead.Now(), base.Now().Add(time.Minute-10*time.Minute); !got.Equal(want) {
		t.Errorf("a minute before the epoch: Now() = %v, want %v", got, want)
	}
	if c, _ := clock.NewScaledAt(base, 1, epoch); c != clock.Clock(base) {
		t.Errorf("factor 1 with an epoch: %T, want the base clock", c)
	}
	if _, err := clock.NewScaledAt(base, 0.5, epoch); err == nil {
		t.Error("NewScaledAt(0.5) accepted")
	}
}

func TestParseEpoch(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{"", time.Time{}, false},
		{"2026-12-03T18:00:00Z", time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC), false},
		{"2026-12-03T19:00:00.123456789+01:00", time.Date(2026, 12, 3, 18, 0, 0, 123456789, time.UTC), false},
		{"1796320800", time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC), false},
		{"1796320800.5", time.Date(2026, 12, 3, 18, 0, 0, 5e8, time.UTC), false},
		{"1796320800.000000001", time.Date(2026, 12, 3, 18, 0, 0, 1, time.UTC), false},
		{"1796320800.", time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC), false},
		{"1796320800.0000000001", time.Time{}, true},
		{"-5", time.Time{}, true},
		{"+5", time.Time{}, true},
		{"99999999999", time.Time{}, true},
		{"1796320800.5e3", time.Time{}, true},
		{"1796320800.-5", time.Time{}, true},
		{"now", time.Time{}, true},
		{"2026-12-03", time.Time{}, true},
	}
	for _, tt := range tests {
		got, err := clock.ParseEpoch(tt.in)
		switch {
		case tt.wantErr && (err == nil || !strings.Contains(err.Error(), "want an RFC 3339 time")):
			t.Errorf("ParseEpoch(%q) = %v, %v, want an error", tt.in, got, err)
		case !tt.wantErr && (err != nil || !got.Equal(tt.want)):
			t.Errorf("ParseEpoch(%q) = %v, %v, want %v", tt.in, got, err, tt.want)
		}
	}
}
