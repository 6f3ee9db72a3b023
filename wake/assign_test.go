package wake

import (
	"testing"
	"time"

	"github.com/torpor-dev/torpor/internal/benchcpu"
)

// TestSecondsFresh: a relay that knows no agent assigns the second the
// device derives itself, and an agent keeps its second.
func TestSecondsFresh(t *testing.T) {
	for _, id := range fleet(t, 50) {
		var s Seconds
		got, err := s.Assign(id, WakeMinute(id))
		if err != nil || got != WakeSecond(id) {
			t.Fatalf("fresh Assign(%s) = %d, %v; want WakeSecond %d", id, got, err, WakeSecond(id))
		}
		if again, _ := s.Assign(id, WakeMinute(id)); again != got || s.Load(WakeMinute(id), got) != 1 {
			t.Fatalf("second Assign(%s) = %d (load %d), want %d counted once", id, again, s.Load(WakeMinute(id), got), got)
		}
	}
}

// TestSecondsBalance: agents assigned one after another fill a minute's
// seconds evenly (no second holds more than one over any other), the ties
// going to the first second at or after the agent's own WakeSecond.
func TestSecondsBalance(t *testing.T) {
	var s Seconds
	ids := fleet(t, 10000)
	for _, id := range ids {
		if _, err := s.Assign(id, WakeMinute(id)); err != nil {
			t.Fatal(err)
		}
	}
	for m := range 60 {
		lo, hi := 1<<30, 0
		for sec := range 60 {
			lo, hi = min(lo, s.Load(m, sec)), max(hi, s.Load(m, sec))
		}
		if hi-lo > 1 {
			t.Errorf("minute %d: seconds hold %d to %d agents, want within one", m, lo, hi)
		}
	}
	var load [60]int32
	load[7], load[8] = 1, 1
	if got := LeastLoaded(&load, 7); got != 9 {
		t.Errorf("LeastLoaded from 7 with 7 and 8 taken = %d, want 9", got)
	}
	for i := range load {
		load[i] = 1
	}
	load[3] = 0
	if got := LeastLoaded(&load, 50); got != 3 {
		t.Errorf("LeastLoaded from 50, only 3 free = %d, want 3 (cyclic)", got)
	}
}

// TestSecondsForget: forgetting an agent frees its second, Set moves an
// agent, and minutes outside 0–59 are refused.
func TestSecondsForget(t *testing.T) {
	var s Seconds
	for sec := range 60 { // minute 5 full once over, except second 20
		if sec != 20 {
			s.Set("x"+string(rune('A'+sec)), 5, sec)
		}
	}
	if got, _ := s.Assign("a", 5); got != 20 {
		t.Fatalf("Assign in a minute whose only free second is 20 = %d", got)
	}
	s.Forget("a")
	s.Forget("never known")
	if got, _ := s.Assign("b", 5); got != 20 || s.Load(5, 20) != 1 {
		t.Fatalf("after Forget: Assign = %d (load %d), want the freed 20 once", got, s.Load(5, 20))
	}
	if err := s.Set("b", 5, 21); err != nil || s.Load(5, 20) != 0 || s.Load(5, 21) != 2 {
		t.Errorf("Set moving b to 21: %v, loads %d and %d, want 0 and 2", err, s.Load(5, 20), s.Load(5, 21))
	}
	// An agent counted in another minute is assigned afresh in its own.
	if got, _ := s.Assign("b", 6); got != WakeSecond("b") || s.Load(5, 21) != 1 {
		t.Errorf("Assign in minute 6 of an agent counted in 5 = %d, load left %d", got, s.Load(5, 21))
	}
	for _, m := range []int{-1, 60} {
		if _, err := s.Assign("c", m); err == nil {
			t.Errorf("Assign in minute %d: no error", m)
		}
	}
	if s.Set("c", 1, 60) == nil || s.Set("c", 60, 1) == nil {
		t.Error("Set outside 0-59: no error")
	}
}

// assigned returns the windows of ids as a relay assigns them, the
// devices linking in the order given: their minute, and Seconds' second.
func assigned(tb testing.TB, ids []string, offset time.Duration) []Window {
	var s Seconds
	ws := make([]Window, len(ids))
	for i, id := range ids {
		sec, err := s.Assign(id, WakeMinute(id))
		if err != nil {
			tb.Fatal(err)
		}
		ws[i] = Window{Minute: WakeMinute(id), Second: sec, Offset: offset}
	}
	return ws
}

// TestWakeStormAssigned: with the seconds a relay assigns, 10,000 devices
// meet max/mean ≤ 2 per second over the hour.
func TestWakeStormAssigned(t *testing.T) {
	top, ratio := peak(arrivals(assigned(t, fleet(t, 10000), 0)))
	if ratio > 2 {
		t.Errorf("assigned: busiest second %d, max/mean %.2f, want ≤ 2", top, ratio)
	}
}

// benchWakeStormAssigned is BenchmarkWakeStorm's rows for a fleet of n
// whose seconds a relay assigns (Seconds.Assign, the code the relay runs
// at a device's state, transport/relay), the devices linking for the
// first time in a fixed order: the busiest second of the hour and
// max/mean per second. The loop times one assignment (a device forgotten
// and assigned again) in a relay that knows the whole fleet.
func benchWakeStormAssigned(b *testing.B, n int) {
	ids := fleet(b, n)
	top, ratio := peak(arrivals(assigned(b, ids, 0)))
	var s Seconds
	for _, id := range ids {
		s.Assign(id, WakeMinute(id))
	}
	b.ResetTimer()
	meter := benchcpu.Start(b)
	for i := 0; i < b.N; i++ {
		id := ids[i%n]
		s.Forget(id)
		s.Assign(id, WakeMinute(id))
	}
	meter.Stop()
	b.StopTimer()
	b.ReportMetric(float64(top), "busiest-s-assigned")
	b.ReportMetric(ratio, "s-max/mean-assigned")
}

// TestSecondsConcurrent: agents assigned from many goroutines at once
// still fill the minute evenly, each counted once.
func TestSecondsConcurrent(t *testing.T) {
	var s Seconds
	ids := fleet(t, 1200)
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := g; i < len(ids); i += 8 {
				s.Assign(ids[i], 30)
			}
		}()
	}
	for range 8 {
		<-done
	}
	for sec := range 60 {
		if n := s.Load(30, sec); n != 20 {
			t.Errorf("second %d holds %d of 1,200 agents, want 20", sec, n)
		}
	}
}
