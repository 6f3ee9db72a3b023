package trusted

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
)

// Source is how the time was established.
type Source string

// The sources, in the order Trusted names the one that established the
// time.
const (
	NTP   Source = "ntp"
	RTC   Source = "rtc"
	Relay Source = "relay"
)

// ErrUntrusted is wrapped by Trusted's error when no source can be
// trusted.
var ErrUntrusted = errors.New("no trusted time")

const (
	// DefaultMaxError bounds the kernel's NTP maximum error when
	// Config.MaxError is zero.
	DefaultMaxError = 2 * time.Second
	// RTCTolerance is how far the RTC (read in whole seconds) may be from
	// the system clock and still count as the clock the system was set
	// from.
	RTCTolerance = 2 * time.Second
	// FloorTolerance is how far before the floor a source may read and
	// still count: the relay's time is in whole seconds, and the floor
	// counts CLOCK_BOOTTIME, which a board's oscillator makes drift.
	FloorTolerance = 2 * time.Second
)

// Config configures a Clock.
type Config struct {
	// Clock is the system's wall clock; nil is clock.Real.
	Clock clock.Clock
	// Kernel reads the kernel's time state; nil is System.
	Kernel Kernel
	// RTC is the device name (rtc0) of a board RTC that keeps time through
	// the sleep; empty when the board has none.
	RTC string
	// MaxError bounds the NTP maximum error; zero means DefaultMaxError.
	MaxError time.Duration
}

// Reading is one establishment of the time.
type Reading struct {
	// Now is the time to judge expiry by; zero when untrusted.
	Now time.Time
	// Source established it; empty when untrusted.
	Source Source
	// System is the system clock's time.
	System time.Time
	// Floor is the floor now; zero before the first commit.
	Floor time.Time
	// Relay is the relay's time now; zero without a link handshake.
	Relay time.Time
	// Forward is how far Now is ahead of System.
	Forward time.Duration
	// Why says why each source that was not trusted was not.
	Why []string
}

// Clock is the trusted time of one agent. Its methods are safe for
// concurrent use.
type Clock struct {
	cfg Config
	db  *bolt.DB
	sys clock.Clock

	mu sync.Mutex
	// mu guards all following fields.
	floor      floor // the last committed floor; zero At for none
	relay      time.Time
	relayLocal time.Time // the system clock's reading when relay was stated
	high       time.Time // the latest time Trusted returned
	boot       Boot      // the boot reading of high
}

var (
	bucket   = []byte("trusted-time")
	keyFloor = []byte("floor")
)

// floor is what Commit stores.
type floor struct {
	At     time.Time     `json:"at"`
	Boot   time.Duration `json:"boot"` // CLOCK_BOOTTIME at At
	BootID string        `json:"bootId"`
}

// Open reads the floor from db (agent.db) and returns the clock.
func Open(db *bolt.DB, cfg Config) (*Clock, error) {
	if cfg.Kernel == nil {
		cfg.Kernel = System
	}
	if cfg.MaxError <= 0 {
		cfg.MaxError = DefaultMaxError
	}
	c := &Clock{cfg: cfg, db: db, sys: clock.Or(cfg.Clock)}
	err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		if v := b.Get(keyFloor); v != nil {
			if err := json.Unmarshal(v, &c.floor); err != nil {
				return fmt.Errorf("the stored floor: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("trusted: %w", err)
	}
	return c, nil
}

// SetRelay records the relay's time from a link handshake: the relay
// stated relay when the system clock read local.
func (c *Clock) SetRelay(relay, local time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.relay, c.relayLocal = relay, local
}

// Establish reads every source and returns the reading. Its error wraps
// ErrUntrusted, saying why, when no source can be trusted.
func (c *Clock) Establish() (Reading, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sys := c.sys.Now()
	r := Reading{System: sys.Round(0)}
	boot, err := c.cfg.Kernel.Boot()
	if err != nil {
		r.Why = append(r.Why, "floor: "+err.Error())
	} else {
		r.Floor = c.floor.at(boot)
	}
	ok := map[Source]bool{NTP: c.ntp(&r), RTC: c.rtc(&r), Relay: c.relayNow(&r, sys)}
	for _, s := range []Source{NTP, RTC, Relay} {
		if ok[s] {
			r.Source = s
			break
		}
	}
	if r.Source == "" {
		return r, fmt.Errorf("%w: %s", ErrUntrusted, strings.Join(r.Why, "; "))
	}
	r.Now = latest(r.System, r.Floor, c.high)
	if ok[Relay] {
		r.Now = latest(r.Now, r.Relay)
	}
	r.Forward = r.Now.Sub(r.System)
	c.high, c.boot = r.Now, boot
	return r, nil
}

// Trusted returns the time to judge expiry by now (Establish).
func (c *Clock) Trusted() (time.Time, error) {
	r, err := c.Establish()
	return r.Now, err
}

// Now implements clock.Clock: the trusted time, or when there is none
// the latest of the system clock and the floor (a lower bound).
func (c *Clock) Now() time.Time {
	r, err := c.Establish()
	if err != nil {
		return latest(r.System, r.Floor)
	}
	return r.Now
}

// NewTimer implements clock.Clock on the system clock.
func (c *Clock) NewTimer(d time.Duration) clock.Timer { return c.sys.NewTimer(d) }

// Commit records t, a time Trusted returned, as the floor in tx (the
// drain's batch transaction).
func (c *Clock) Commit(tx *bolt.Tx, t time.Time) error {
	c.mu.Lock()
	f := floor{At: t.Round(0).UTC(), Boot: c.boot.Since, BootID: c.boot.ID}
	if !t.Equal(c.high) { // not the last reading: CLOCK_BOOTTIME now is later than at t
		if b, err := c.cfg.Kernel.Boot(); err == nil {
			f.Boot, f.BootID = b.Since, b.ID
		}
	}
	c.mu.Unlock()
	v, err := json.Marshal(f)
	if err != nil {
		return err
	}
	b, err := tx.CreateBucketIfNotExists(bucket)
	if err != nil {
		return err
	}
	if err := b.Put(keyFloor, v); err != nil {
		return err
	}
	tx.OnCommit(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if f.At.After(c.floor.At) {
			c.floor = f
		}
	})
	return nil
}

// Persist commits t as the floor in a transaction of its own.
func (c *Clock) Persist(t time.Time) error {
	return c.db.Update(func(tx *bolt.Tx) error { return c.Commit(tx, t) })
}

// at returns the floor when the kernel reads b: the time committed plus
// the time known to have passed since.
func (f floor) at(b Boot) time.Time {
	if f.At.IsZero() {
		return time.Time{}
	}
	if b.ID == f.BootID && b.Since >= f.Boot {
		return f.At.Add(b.Since - f.Boot)
	}
	return f.At.Add(b.Since) // powered off since: at least the time since boot
}

func latest(ts ...time.Time) time.Time {
	var l time.Time
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}
