package clocktest

import (
	"runtime"
	"testing"
	"time"
)

// TestRecorderSendsOnlyOnceTheTimerIsSet: a test that reads a duration
// from Made and then advances the clock by it must fire that timer, so
// the timer is on the clock by the time its duration reaches Made. (When
// Made was sent first, an Advance could run before the timer existed and
// the component waited forever.)
func TestRecorderSendsOnlyOnceTheTimerIsSet(t *testing.T) {
	r := NewRecorder(time.Unix(0, 0), 0) // unbuffered: the reader runs on as the sender wakes
	for i := range 500 {
		fired := make(chan struct{})
		go func() {
			<-r.NewTimer(time.Second).C()
			close(fired)
		}()
		runtime.Gosched() // let the timer's maker reach Made first
		if d := <-r.Made; d != time.Second {
			t.Fatalf("Made got %v, want 1s", d)
		}
		if n := r.Pending(); n != 1 {
			t.Fatalf("round %d: %d timers on the clock once Made had the duration, want 1", i, n)
		}
		r.Advance(time.Second)
		<-fired
	}
}
