package trusted

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestRoundTripIsNotALag: the relay's statement arrives 4 s after the
// device sent its request (a link opened under load). The device judges
// by the round trip's midpoint (RFC 5905, Section 8), and a floor kept
// from a faster handshake does not make the slow one "before the floor".
func TestRoundTripIsNotALag(t *testing.T) {
	e := newEnv(t)
	c := e.open("")
	c.SetRelay(truth, e.sys.Now())
	e.keep(c)
	e.pass(10 * time.Second)
	sent := e.sys.Now()
	e.pass(4 * time.Second)
	// The relay stamped truth+10s (truncated) as the request reached it.
	c.SetRelayExchange(truth.Add(10*time.Second), sent, e.sys.Now())
	r := e.keep(c)
	if r.Source != Relay || !r.Relay.Equal(truth.Add(12*time.Second)) {
		t.Errorf("after a 4 s round trip: %+v, want relay at %v (the midpoint)", r, truth.Add(12*time.Second))
	}
	// Past the round trip, whole seconds and FloorTolerance: not the relay.
	c.SetRelayExchange(truth.Add(14*time.Second-7*time.Second-time.Millisecond), sent, e.sys.Now())
	e.untrusted(c, "is before the floor")
}

// TestOneSourceBoundedByTheDevice: one source moves the floor no further
// than CLOCK_BOOTTIME measured since the last agreed reading, allowed
// 100 ppm; it still judges by the source (expiry early, never late), says
// what it held, and a hundred readings do not ratchet the floor forward.
func TestOneSourceBoundedByTheDevice(t *testing.T) {
	e := newEnv(t)
	c := e.open("")
	c.SetRelay(truth, e.sys.Now())
	e.keep(c)
	for range 100 {
		e.pass(time.Second)
		c.SetRelay(truth.Add(time.Hour), e.sys.Now())
		r := e.keep(c)
		if !r.Now.Equal(truth.Add(time.Hour)) || len(r.Held) != 1 || !strings.Contains(r.Held[0], "relay: its time 2026-06-01T13:00:00Z is beyond what the device can bound") {
			t.Fatalf("a relay an hour ahead: now %v, held %q; want judged by it and held", r.Now, r.Held)
		}
	}
	r := e.establish(c)
	if want := truth.Add(100*time.Second + 10*time.Millisecond); r.Floor.After(want) || r.Ceiling.After(want) {
		t.Errorf("after 100 s: floor %v, ceiling %v; want at most %v", r.Floor, r.Ceiling, want)
	}
}

// afterPowerOff is an env whose device took the time from its relay and
// kept it, then was powered off: it runs a new boot, 30 s old.
func afterPowerOff(t *testing.T) *env {
	e := newEnv(t)
	c := e.open("")
	c.SetRelay(truth, e.sys.Now())
	e.keep(c)
	e.k.boot = Boot{ID: "boot-2", Since: 30 * time.Second}
	return e
}

// TestTwoSourcesAgree: after a power-off the device cannot bound the time
// by itself; NTP and the relay both stating it is at least 8 h later
// prove it, and the floor and the ceiling move. With NTP alone a
// hostile relay's 2100 proves only NTP's time.
func TestTwoSourcesAgree(t *testing.T) {
	e := afterPowerOff(t)
	later := truth.Add(8 * time.Hour)
	e.sys.Set(later)
	e.k.ntp = NTPState{Synced: true}
	c := e.open("")
	c.SetRelay(later, e.sys.Now())
	if r := e.keep(c); !r.Proven.Equal(later) || len(r.Held) != 0 {
		t.Errorf("ntp and relay agree: proven %v, held %q; want %v and none", r.Proven, r.Held, later)
	}
	if r := e.establish(c); !r.Floor.Equal(later) || !r.Ceiling.Equal(later) {
		t.Errorf("floor %v, ceiling %v; want both %v", r.Floor, r.Ceiling, later)
	}
	c.SetRelay(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), e.sys.Now())
	if r := e.keep(c); !r.Proven.Equal(later) || len(r.Held) != 1 || !strings.HasPrefix(r.Held[0], "relay:") {
		t.Errorf("ntp and a 2100 relay: proven %v, held %q; want %v, the relay held", r.Proven, r.Held, later)
	}
	e.k.ntp = NTPState{}
	c.SetRelay(later, e.sys.Now())
	if r := e.keep(c); r.Source != Relay || !r.Now.Equal(later) {
		t.Errorf("back to the relay alone: %+v, want relay at %v", r, later)
	}
}

// TestOneSourceAfterPowerOff: a device that was powered off, with only
// its relay, keeps no more than the time since boot as the floor (it
// cannot measure the sleep), and judges by the relay.
func TestOneSourceAfterPowerOff(t *testing.T) {
	e := afterPowerOff(t)
	e.sys.Set(truth.Add(-time.Hour)) // fake-hwclock's time
	c := e.open("")
	c.SetRelay(truth.Add(8*time.Hour), e.sys.Now())
	r := e.keep(c)
	if !r.Now.Equal(truth.Add(8*time.Hour)) || len(r.Held) != 1 {
		t.Errorf("after a power-off: now %v, held %q; want the relay's %v, held", r.Now, r.Held, truth.Add(8*time.Hour))
	}
	if max := truth.Add(30*time.Second + 3*time.Millisecond); r.Proven.After(max) {
		t.Errorf("kept %v, want at most %v (the floor and the time since boot)", r.Proven, max)
	}
}

// TestFreshDeviceOneSource: a device with no floor trusts its first
// reading from one source, and keeps it.
func TestFreshDeviceOneSource(t *testing.T) {
	e := newEnv(t)
	c := e.open("")
	c.SetRelay(truth.Add(time.Hour), e.sys.Now())
	if r := e.keep(c); !r.Proven.Equal(truth.Add(time.Hour)) || len(r.Held) != 0 {
		t.Errorf("first reading: proven %v, held %q; want %v", r.Proven, r.Held, truth.Add(time.Hour))
	}
}

// TestFloorWithoutCeiling: a floor kept before there were ceilings bounds
// one source from its own time.
func TestFloorWithoutCeiling(t *testing.T) {
	e := newEnv(t)
	v, _ := json.Marshal(map[string]any{"at": truth, "boot": time.Minute, "bootId": "boot-1"})
	if err := e.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		return b.Put(keyFloor, v)
	}); err != nil {
		t.Fatal(err)
	}
	e.pass(time.Minute)
	c := e.open("")
	c.SetRelay(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), e.sys.Now())
	if r := e.keep(c); !r.Ceiling.Equal(truth.Add(time.Minute+6*time.Millisecond)) || r.Proven.After(r.Ceiling) {
		t.Errorf("ceiling %v, proven %v; want %v and no more", r.Ceiling, r.Proven, truth.Add(time.Minute+6*time.Millisecond))
	}
}

// TestCommitOlderReading: Commit of a time an earlier reading returned
// keeps no more than that time.
func TestCommitOlderReading(t *testing.T) {
	e := newEnv(t)
	e.k.ntp.Synced = true
	c := e.open("")
	first := e.establish(c).Now
	e.pass(time.Minute)
	e.establish(c)
	if err := c.Persist(first); err != nil {
		t.Fatal(err)
	}
	if r := e.establish(c); !r.Floor.Equal(first) {
		t.Errorf("floor %v, want %v (the older reading's time, kept at CLOCK_BOOTTIME now)", r.Floor, first)
	}
}

// TestSetFloorLowers: a fresh device's first reading came from a relay
// stating 2100, which it kept; the owner's word lowers the floor, and the
// genuine relay is trusted again and moves it on only as far as the
// device can measure.
func TestSetFloorLowers(t *testing.T) {
	e := newEnv(t)
	c := e.open("")
	c.SetRelay(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), e.sys.Now())
	e.keep(c)
	c.SetRelay(truth, e.sys.Now())
	e.untrusted(c, "before the floor 2100-01-01T00:00:00Z")
	if err := c.SetFloor(truth); err != nil {
		t.Fatal(err)
	}
	e.pass(time.Minute)
	c = e.open("") // kept in agent.db
	c.SetRelay(truth.Add(time.Minute), e.sys.Now())
	if r := e.keep(c); r.Source != Relay || !r.Floor.Equal(truth.Add(time.Minute)) {
		t.Errorf("after the owner's floor: %+v, want relay, floor %v", r, truth.Add(time.Minute))
	}
	if err := c.SetFloor(time.Time{}); err == nil {
		t.Error("SetFloor(zero) succeeded")
	}
}

// TestSetFloorDuringABatch: a batch that committed the old reading's
// floor in a transaction still open when the owner's floor arrives does
// not bring the old floor back, in memory or in agent.db.
func TestSetFloorDuringABatch(t *testing.T) {
	e := newEnv(t)
	c := e.open("")
	c.SetRelay(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), e.sys.Now())
	r := e.keep(c)
	tx, err := e.db.Begin(true)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(tx, r.Now); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.SetFloor(truth) }()
	for { // SetFloor holds in memory before its transaction can start
		c.mu.Lock()
		set := c.floor.At.Equal(truth)
		c.mu.Unlock()
		if set {
			break
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c.SetRelay(truth, e.sys.Now())
	if r := e.establish(c); !r.Floor.Equal(truth) {
		t.Errorf("floor in memory %v, want the owner's %v", r.Floor, truth)
	}
	again := e.open("")
	again.SetRelay(truth, e.sys.Now())
	if r := e.establish(again); !r.Floor.Equal(truth) {
		t.Errorf("floor in agent.db %v, want the owner's %v", r.Floor, truth)
	}
}

// TestNTPAndASlowRelayAgree: after a power-off NTP and a relay whose
// handshake took 3 s both give the time; the relay's lower bound is kept,
// and NTP's time, within the relay's round trip of it, is not reported
// as held.
func TestNTPAndASlowRelayAgree(t *testing.T) {
	e := afterPowerOff(t)
	later := truth.Add(8 * time.Hour)
	e.k.ntp = NTPState{Synced: true}
	e.sys.Set(later.Add(-3 * time.Second))
	sent := e.sys.Now()
	e.sys.Set(later)
	c := e.open("")
	c.SetRelayExchange(later.Add(-3*time.Second), sent, e.sys.Now()) // stamped as the request arrived
	r := e.keep(c)
	if !r.Proven.Equal(later.Add(-3*time.Second)) || len(r.Held) != 0 {
		t.Errorf("proven %v, held %q; want the relay's lower bound %v, nothing held", r.Proven, r.Held, later.Add(-3*time.Second))
	}
}

// TestRTCBoundsAfterPowerOff: a board whose RTC kept time through a
// power-off measures the sleep itself: its time is kept as the floor
// with no second source, and a relay stating 2100 beside it is held.
func TestRTCBoundsAfterPowerOff(t *testing.T) {
	e := newEnv(t)
	e.k.rtc = truth
	c := e.open("rtc0")
	e.keep(c)
	later := truth.Add(8 * time.Hour)
	e.k.boot = Boot{ID: "boot-2", Since: 30 * time.Second}
	e.k.rtc = later
	e.sys.Set(later)
	c = e.open("rtc0")
	if r := e.keep(c); r.Source != RTC || !r.Proven.Equal(later) || len(r.Held) != 0 {
		t.Errorf("the RTC after a power-off: %+v, want rtc, %v kept, nothing held", r, later)
	}
	c.SetRelay(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), e.sys.Now())
	if r := e.keep(c); !r.Proven.Equal(later) || len(r.Held) != 1 || !strings.HasPrefix(r.Held[0], "relay:") {
		t.Errorf("the RTC and a 2100 relay: proven %v, held %q; want %v, the relay held", r.Proven, r.Held, later)
	}
}

// TestScaledCeilingKeepsPace: under --time-scale 120 a relay's stated time
// runs 120 times as fast as CLOCK_BOOTTIME. With Config.Scale the ceiling
// keeps pace, so a genuine scaled relay raises the floor without a
// "beyond what the device can bound" hold; the floor itself counts
// CLOCK_BOOTTIME unscaled, so that it never runs ahead of the relay.
// (Without Scale every reading was held: the demo's misleading warning.)
func TestScaledCeilingKeepsPace(t *testing.T) {
	e := newEnv(t)
	c, err := Open(e.db, Config{Clock: e.sys, Kernel: e.k, Scale: 120})
	if err != nil {
		t.Fatal(err)
	}
	c.SetRelay(truth, e.sys.Now())
	e.keep(c)
	e.k.boot.Since += 10 * time.Second // 10 s real: 20 min on the scaled clocks
	e.sys.Advance(20 * time.Minute)
	c.SetRelay(truth.Add(20*time.Minute), e.sys.Now())
	r := e.keep(c)
	if len(r.Held) != 0 || !r.Now.Equal(truth.Add(20*time.Minute)) {
		t.Errorf("a scaled relay 20 min on after 10 s real: now %v, held %q; want it kept", r.Now, r.Held)
	}
	e.k.boot.Since += time.Second
	if r := e.establish(c); r.Floor.After(truth.Add(20*time.Minute + 2*time.Second)) {
		t.Errorf("the floor 1 s real later: %v, want it to count unscaled time (at most %v)", r.Floor, truth.Add(20*time.Minute+2*time.Second))
	}
}
