package clock_test

import (
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
