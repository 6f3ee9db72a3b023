package vm

import (
	"testing"
	"time"
)

// TestCPUSamplesBetween: a time between two samples reads the figures
// interpolated linearly; a time outside the samples reads the nearest.
func TestCPUSamplesBetween(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := CPUSamples{
		{At: t0, VCPU: 100 * time.Millisecond, Main: 10 * time.Millisecond},
		{At: t0.Add(time.Second), VCPU: 300 * time.Millisecond, Main: 30 * time.Millisecond},
		{At: t0.Add(2 * time.Second), VCPU: 300 * time.Millisecond, Main: 50 * time.Millisecond},
	}
	for _, tt := range []struct {
		from, to   time.Duration
		vcpu, main time.Duration
	}{
		{0, time.Second, 200 * time.Millisecond, 20 * time.Millisecond},
		{500 * time.Millisecond, 1500 * time.Millisecond, 100 * time.Millisecond, 20 * time.Millisecond},
		{1200 * time.Millisecond, 1800 * time.Millisecond, 0, 12 * time.Millisecond},
		{-time.Second, 3 * time.Second, 200 * time.Millisecond, 40 * time.Millisecond},
		{3 * time.Second, 4 * time.Second, 0, 0},
	} {
		vcpu, main := s.Between(t0.Add(tt.from), t0.Add(tt.to))
		if vcpu != tt.vcpu || main != tt.main {
			t.Errorf("Between(%v, %v) = %v, %v; want %v, %v", tt.from, tt.to, vcpu, main, tt.vcpu, tt.main)
		}
	}
	if vcpu, main := (CPUSamples{}).Between(t0, t0.Add(time.Second)); vcpu != 0 || main != 0 {
		t.Errorf("no samples: %v, %v; want nothing", vcpu, main)
	}
}
