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
	// still count: the floor counts CLOCK_BOOTTIME, which a board's
	// oscillator makes drift. A relay's reading is allowed the handshake's
	// round trip and RelayResolution on top (relayNow).
	FloorTolerance = 2 * time.Second
	// RelayResolution is the resolution of the relay's stated time: whole
	// seconds, truncated (wire.Challenge.Time).
	RelayResolution = time.Second
	// MaxDriftPPM is how fast, in parts per million, the device's own
	// measure of elapsed time (CLOCK_BOOTTIME) may run slow against real
	// time: 100 ppm covers an uncalibrated crystal (typically 20 to
	// 50 ppm) over its temperature range.
	MaxDriftPPM = 100
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
	// Scale is how many times faster than CLOCK_BOOTTIME the wall clock
	// and the sources' stated times run (--time-scale, a demonstration);
	// zero means 1. The ceiling (how far one source may move the floor)
	// counts elapsed time that much faster, so that it keeps pace with a
	// scaled relay, and FloorTolerance, a real-time jitter, spans that
	// much more scaled time; the floor itself counts CLOCK_BOOTTIME
	// unscaled, so that it never runs ahead of the sources.
	Scale float64
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
	// Relay is the relay's time now, estimated from the handshake's
	// round trip (relayNow); zero without a link handshake.
	Relay time.Time
	// Forward is how far Now is ahead of System.
	Forward time.Duration
	// Why says why each source that was not trusted was not.
	Why []string
	// Proven is what Commit keeps as the floor for this reading (prove):
	// the latest time a trusted source states, moved no further than
	// Ceiling unless a second source agrees; never System's own lead.
	Proven time.Time
	// Ceiling is the furthest a single source may move the floor: the
	// floor's bound carried forward by the time the device measured
	// since (floor.ceiling), or the board's RTC when it is trusted; zero
	// before the first commit.
	Ceiling time.Time
	// Held says which source's time was not kept as the floor because it
	// was beyond Ceiling and no second source agreed.
	Held []string

	relayHi time.Time // the top of the relay's interval (relayNow)
}

// Clock is the trusted time of one agent. Its methods are safe for
// concurrent use.
type Clock struct {
	cfg Config
	db  *bolt.DB
	sys clock.Clock

	mu sync.Mutex
	// mu guards all following fields.
	floor floor     // the last committed floor; zero At for none
	relay statement // the relay's time from the last link handshake
	last  kept      // what Commit keeps for the last reading
	gen   int       // SetFloor's count: a Commit from before it is not kept in memory
}

// statement is the relay's time from a link handshake: it stated Time,
// which the device received at Received after sending its request at
// Sent (both on the system clock).
type statement struct {
	time, sent, received time.Time
}

// kept is what Commit keeps for a reading that returned now.
type kept struct {
	now, proven, ceiling time.Time
	boot                 Boot // CLOCK_BOOTTIME at the reading
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
	// Ceiling is Reading.Ceiling at Boot; zero in a floor kept before
	// there were ceilings (then At).
	Ceiling time.Time `json:"ceiling,omitzero"`
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
// stated relay when the system clock read local (SetRelayExchange with
// no round trip).
func (c *Clock) SetRelay(relay, local time.Time) { c.SetRelayExchange(relay, local, local) }

// SetRelayExchange records the relay's time from a link handshake: the
// device sent its request when the system clock read sent, and the
// relay's statement relay arrived when it read received
// (transport/link's Client.RelayExchange).
func (c *Clock) SetRelayExchange(relay, sent, received time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.relay = statement{time: relay, sent: sent, received: received}
}

// Establish reads every source and returns the reading. Its error wraps
// ErrUntrusted, saying why, when no source can be trusted.
func (c *Clock) Establish() (Reading, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sys := c.sys.Now()
	r := Reading{System: sys.Round(0)}
	boot, err := c.cfg.Kernel.Boot()
	if err != nil { // nothing measured since the floor: it and its ceiling as kept
		r.Why = append(r.Why, "floor: "+err.Error())
		boot = Boot{}
	}
	r.Floor, r.Ceiling = c.floor.at(boot), c.floor.ceiling(boot, c.cfg.Scale)
	lo := map[Source]time.Time{}
	if c.ntp(&r) {
		lo[NTP] = r.System
	}
	if c.rtc(&r) { // the board's own clock through the sleep: it bounds the time too
		lo[RTC] = r.System
		r.Ceiling = latest(r.Ceiling, r.System)
	}
	if t, ok := c.relayNow(&r, sys); ok {
		lo[Relay] = t
	}
	for _, s := range []Source{NTP, RTC, Relay} {
		if _, ok := lo[s]; ok {
			r.Source = s
			break
		}
	}
	if r.Source == "" {
		return r, fmt.Errorf("%w: %s", ErrUntrusted, strings.Join(r.Why, "; "))
	}
	// Judged by the latest: a source ahead (or the system clock's own
	// lead) makes objects expire early, never late.
	r.Now = latest(r.System, r.Floor)
	if _, ok := lo[Relay]; ok {
		r.Now = latest(r.Now, r.Relay)
	}
	r.Forward = r.Now.Sub(r.System)
	ceiling := prove(&r, lo, c.tolerance())
	c.last = kept{now: r.Now, proven: r.Proven, ceiling: ceiling, boot: boot}
	return r, nil
}

// prove sets r.Proven, the floor the reading may keep, from each trusted
// source's lower bound lo, and returns the ceiling to keep with it. A
// fresh device (no floor) keeps its one source's time. Otherwise one
// source moves the floor no further than r.Ceiling, what the device
// measured itself since the last agreed reading; two independent sources
// that both state at least t prove t. The system clock is never a source
// of its own: NTP and the RTC vouch for it.
func prove(r *Reading, lo map[Source]time.Time, tolerance time.Duration) time.Time {
	var first, second time.Time
	var top Source
	for _, s := range []Source{NTP, RTC, Relay} {
		t, ok := lo[s]
		switch {
		case !ok:
		case top == "" || t.After(first):
			second, first, top = first, t, s
		case t.After(second):
			second = t
		}
	}
	if r.Floor.IsZero() {
		r.Proven = first
		return first
	}
	r.Proven = latest(r.Floor, earliest(first, r.Ceiling), second)
	// Held when beyond what is kept and, for another source than the
	// relay, beyond the relay's round trip too (NTP's time after a
	// power-off, with a relay a slow handshake behind it, agrees).
	allowed := r.Proven
	if top != Relay {
		allowed = latest(allowed, r.relayHi)
	}
	if first.After(allowed.Add(tolerance)) {
		r.Held = append(r.Held, fmt.Sprintf("%s: its time %s is beyond what the device can bound by its own clock (%s) and no second source agrees: the floor stays at %s",
			top, stamp(first), stamp(r.Ceiling), stamp(r.Proven)))
	}
	return latest(r.Ceiling, second)
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

// Commit records the floor of the reading that returned t (Trusted) in
// tx (the drain's batch transaction): Reading.Proven, not t, which may be
// the untrusted system clock's lead or a source's unproven jump.
func (c *Clock) Commit(tx *bolt.Tx, t time.Time) error {
	c.mu.Lock()
	l, gen := c.last, c.gen
	f := floor{At: l.proven.Round(0).UTC(), Boot: l.boot.Since, BootID: l.boot.ID, Ceiling: l.ceiling.Round(0).UTC()}
	if !t.Equal(l.now) { // not the last reading: no more than t, at CLOCK_BOOTTIME now (later than at t)
		f.At = earliest(f.At, t.Round(0).UTC())
		if b, err := c.cfg.Kernel.Boot(); err == nil {
			f.Boot, f.BootID = b.Since, b.ID
		}
	}
	c.mu.Unlock()
	if f.At.IsZero() {
		return nil // no trusted reading yet: nothing proven to keep
	}
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
		if gen == c.gen && !f.At.Before(c.floor.At) {
			c.floor = f
		}
	})
	return nil
}

// SetFloor replaces the floor with at, earlier or later than the one
// kept, and makes at the ceiling too: the owner's word, from a signed
// command (runtime/manage's time operation), for a floor a source later
// found wrong moved (a first reading from a lying relay), or to prove a
// jump no second source can. It is kept at CLOCK_BOOTTIME now. It holds
// from its return: a batch that commits later keeps only what a reading
// taken after it proved (in memory at once; in agent.db, in a transaction
// bbolt orders after any batch already writing).
func (c *Clock) SetFloor(at time.Time) error {
	if at.IsZero() {
		return errors.New("trusted: a zero floor")
	}
	boot, err := c.cfg.Kernel.Boot()
	if err != nil {
		return fmt.Errorf("trusted: %w", err)
	}
	f := floor{At: at.Round(0).UTC(), Boot: boot.Since, BootID: boot.ID, Ceiling: at.Round(0).UTC()}
	v, err := json.Marshal(f)
	if err != nil {
		return err
	}
	c.mu.Lock() // not held into db.Update: a batch's transaction calls Commit
	c.floor, c.last, c.gen = f, kept{}, c.gen+1
	c.mu.Unlock()
	err = c.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		return b.Put(keyFloor, v)
	})
	if err != nil {
		return fmt.Errorf("trusted: %w", err)
	}
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

// tolerance is FloorTolerance, a measure of real time: under a scaled
// clock (Config.Scale) the timing jitter it allows for (a handshake's
// round trip, CLOCK_BOOTTIME against the wall clock) spans that many
// times more of the scaled time.
func (c *Clock) tolerance() time.Duration {
	if c.cfg.Scale > 1 {
		return time.Duration(float64(FloorTolerance) * c.cfg.Scale)
	}
	return FloorTolerance
}

// ceiling returns the furthest one source may move the floor when the
// kernel reads b: the kept ceiling plus the time the device measured
// since (times scale, when above 1: Config.Scale), allowed MaxDriftPPM.
// Time powered off is not measured, so it does not count; zero without
// a floor.
func (f floor) ceiling(b Boot, scale float64) time.Time {
	if f.At.IsZero() {
		return time.Time{}
	}
	c := latest(f.At, f.Ceiling)
	since := b.Since
	if b.ID == f.BootID && b.Since >= f.Boot {
		since = b.Since - f.Boot
	}
	if scale > 1 {
		since = time.Duration(float64(since) * scale)
	}
	return c.Add(since + since/(1_000_000/MaxDriftPPM))
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
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
