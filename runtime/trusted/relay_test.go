package trusted

import (
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestRelayMovesForward: the device's clock is an hour behind (no NTP, no
// RTC); the relay's time from the handshake moves the clock used for
// expiry forward to the truth, and it keeps running on the system clock.
func TestRelayMovesForward(t *testing.T) {
	e := newEnv(t)
	e.sys.Set(truth.Add(-time.Hour))
	c := e.open("")
	e.untrusted(c, "relay: no link handshake yet")
	c.SetRelay(truth, e.sys.Now())
	e.sys.Advance(10 * time.Second)
	r := e.establish(c)
	if want := truth.Add(10 * time.Second); r.Source != Relay || !r.Now.Equal(want) || r.Forward != time.Hour {
		t.Errorf("reading %+v, want relay at %v, forward 1h", r, want)
	}
	if got := c.Now(); !got.Equal(truth.Add(10 * time.Second)) {
		t.Errorf("Now() = %v, want the trusted time", got)
	}
}

// TestRelayNeverMovesBack: a relay whose clock is behind the device's
// (lying, or wrong) does not move the clock back, neither from a synced
// system clock nor from an unsynced one.
func TestRelayNeverMovesBack(t *testing.T) {
	for _, synced := range []bool{true, false} {
		e := newEnv(t)
		e.k.ntp.Synced = synced
		c := e.open("")
		c.SetRelay(truth.Add(-2*time.Hour), e.sys.Now())
		r := e.establish(c)
		if !r.Now.Equal(truth) || r.Forward != 0 {
			t.Errorf("synced %v: a relay two hours behind gave %v (forward %v), want the system clock's %v", synced, r.Now, r.Forward, truth)
		}
	}
	// A relay ahead moves even a synced clock forward: objects expire
	// early, never late.
	e := newEnv(t)
	e.k.ntp.Synced = true
	c := e.open("")
	c.SetRelay(truth.Add(time.Hour), e.sys.Now())
	if r := e.establish(c); r.Source != NTP || !r.Now.Equal(truth.Add(time.Hour)) {
		t.Errorf("a relay an hour ahead of a synced clock: %+v, want ntp at %v", r, truth.Add(time.Hour))
	}
}

// TestRelayBeforeTheFloor: a relay that states a time before what the
// device knows has passed is not trusted, and the drain must hold.
func TestRelayBeforeTheFloor(t *testing.T) {
	e := newEnv(t)
	e.k.ntp.Synced = true
	c := e.open("")
	if err := c.Persist(e.establish(c).Now); err != nil {
		t.Fatal(err)
	}
	e.k.ntp.Synced = false
	e.k.boot.Since += 3 * time.Hour // suspended three hours, same boot
	e.sys.Set(truth.Add(-time.Hour))
	c = e.open("")
	c.SetRelay(truth.Add(time.Hour), e.sys.Now()) // two hours short of the truth
	e.untrusted(c, "relay: its time 2026-06-01T13:00:00Z is before the floor 2026-06-01T15:00:00Z")
}

// TestFloor: the floor is the last committed time plus CLOCK_BOOTTIME
// elapsed in the same boot, or plus the time since boot after a power-off;
// a trusted source reading below it is raised to it.
func TestFloor(t *testing.T) {
	e := newEnv(t)
	e.k.ntp.Synced = true
	c := e.open("")
	committed := truth.Add(5 * time.Minute)
	e.sys.Set(committed)
	at := e.establish(c).Now
	if err := e.db.Update(func(tx *bolt.Tx) error { return c.Commit(tx, at) }); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		boot Boot
		want time.Time
	}{
		{"suspended 2h, same boot", Boot{ID: "boot-1", Since: time.Minute + 2*time.Hour}, committed.Add(2 * time.Hour)},
		{"powered off, up 30s", Boot{ID: "boot-2", Since: 30 * time.Second}, committed.Add(30 * time.Second)},
	}
	for _, tt := range tests {
		e.k.boot = tt.boot
		e.sys.Set(truth) // synced, but behind what the device knows
		r := e.establish(e.open(""))
		if !r.Floor.Equal(tt.want) || !r.Now.Equal(tt.want) {
			t.Errorf("%s: floor %v, now %v; want both %v", tt.name, r.Floor, r.Now, tt.want)
		}
	}
}

// TestCommitRolledBack: a floor in a transaction that does not commit is
// not kept.
func TestCommitRolledBack(t *testing.T) {
	e := newEnv(t)
	e.k.ntp.Synced = true
	c := e.open("")
	e.sys.Set(truth.Add(time.Hour))
	at := e.establish(c).Now
	tx, err := e.db.Begin(true)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(tx, at); err != nil {
		t.Fatal(err)
	}
	tx.Rollback()
	e.sys.Set(truth)
	if r := e.establish(e.open("")); !r.Floor.IsZero() {
		t.Errorf("floor %v after a rolled-back commit, want none", r.Floor)
	}
}
