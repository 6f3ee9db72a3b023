package trusted

import (
	"testing"
	"time"
)

// pass advances the device's system clock and CLOCK_BOOTTIME together by
// d: time passes within one boot.
func (e *env) pass(d time.Duration) {
	e.sys.Advance(d)
	e.k.boot.Since += d
}

// keep establishes the time and commits it as the floor, as a wake does.
func (e *env) keep(c *Clock) Reading {
	e.t.Helper()
	r := e.establish(c)
	if err := c.Persist(r.Now); err != nil {
		e.t.Fatal(err)
	}
	return r
}

// TestSystemClockLeadNotKept: the relay is the
// only trusted source and the device's unsynchronised system clock runs
// 3 s ahead of it. The reading judges by the system clock's lead (objects
// expire early, never late) but keeps only the relay's time as the floor,
// so the same relay is not "before the floor" at the next batch.
func TestSystemClockLeadNotKept(t *testing.T) {
	e := newEnv(t)
	e.sys.Set(truth.Add(3 * time.Second))
	c := e.open("")
	c.SetRelay(truth, e.sys.Now())
	if r := e.keep(c); !r.Now.Equal(truth.Add(3 * time.Second)) {
		t.Errorf("judged by %v, want the system clock's %v (the later)", r.Now, truth.Add(3*time.Second))
	}
	for range 5 {
		e.pass(5 * time.Second)
		e.keep(c)
	}
	if r := e.establish(c); r.Floor.After(truth.Add(25 * time.Second)) {
		t.Errorf("floor %v, ahead of the relay's %v: the system clock's lead was kept", r.Floor, truth.Add(25*time.Second))
	}
}

// TestRelayLagsOnRelink: during a drain the link is opened again under
// load, and the relay's statement arrives 2.5 s after the relay stamped
// it; the floor kept from the first statement does not make the second
// "before the floor".
func TestRelayLagsOnRelink(t *testing.T) {
	e := newEnv(t)
	c := e.open("")
	c.SetRelay(truth, e.sys.Now())
	e.keep(c)
	e.pass(10 * time.Second)
	e.keep(c)
	c.SetRelay(truth.Add(10*time.Second-2500*time.Millisecond), e.sys.Now())
	e.pass(5 * time.Second)
	if r := e.keep(c); r.Source != Relay {
		t.Errorf("after a slow re-link: source %q (%v), want relay", r.Source, r.Why)
	}
}

// TestHostileRelayYear2100: a relay states the year 2100 to a
// device that already has a floor. The device judges that wake by it
// (objects expire early, never late) but does not keep it, and back on
// its genuine relay it is trusted and judges by the genuine time.
func TestHostileRelayYear2100(t *testing.T) {
	e := newEnv(t)
	c := e.open("")
	c.SetRelay(truth, e.sys.Now())
	e.keep(c)
	e.pass(time.Minute)
	hostile := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	c.SetRelay(hostile, e.sys.Now())
	if r := e.keep(c); !r.Now.Equal(hostile) {
		t.Errorf("the hostile wake judged by %v, want %v", r.Now, hostile)
	}
	e.pass(time.Minute)
	c = e.open("") // the next wake
	c.SetRelay(truth.Add(2*time.Minute), e.sys.Now())
	r := e.keep(c)
	// The floor may have moved by the drift the device allows its own
	// clock over the two minutes (100 ppm: 12 ms), no further.
	if d := r.Now.Sub(truth.Add(2 * time.Minute)); r.Source != Relay || d < 0 || d > 12*time.Millisecond {
		t.Errorf("back on the genuine relay: %+v, want relay at %v", r, truth.Add(2*time.Minute))
	}
}
