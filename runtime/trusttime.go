package runtime

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/runtime/trusted"
)

// TimeReport is how a wake established the time its drain judges
// Governed Object expiry by (package runtime/trusted).
type TimeReport struct {
	// Source is ntp, rtc or relay; empty when there was none.
	Source string `cbor:"1,keyasint,omitempty" json:"source,omitempty"`
	// At is the trusted time when it was established.
	At time.Time `cbor:"2,keyasint,omitempty" json:"at,omitempty"`
	// Forward is how far it was ahead of the system clock (the relay's
	// time or the floor moved it forward).
	Forward time.Duration `cbor:"3,keyasint,omitempty" json:"forward,omitempty"`
	// Floor is the floor then; zero before the first commit.
	Floor time.Time `cbor:"4,keyasint,omitempty" json:"floor,omitempty"`
	// Relay is the relay's time then; zero without a handshake.
	Relay time.Time `cbor:"5,keyasint,omitempty" json:"relay,omitempty"`
	// Untrusted says why no source could be trusted: the drain holds
	// every record.
	Untrusted string `cbor:"6,keyasint,omitempty" json:"untrusted,omitempty"`
	// Held says which source stated a time further than the device can
	// bound by its own clock, with no second source agreeing: the wake
	// judged by it (objects expire early, never late) but did not keep it
	// as the floor (a relay stating the year 2100, say).
	Held string `cbor:"7,keyasint,omitempty" json:"held,omitempty"`
}

// attrs are the wake line's attributes of r; none for nil.
func (r *TimeReport) attrs() []any {
	switch {
	case r == nil:
		return nil
	case r.Source == "":
		return []any{"trustedTime", "none", "trustedTimeWhy", r.Untrusted}
	}
	a := []any{"trustedTime", r.Source}
	if r.Forward != 0 {
		a = append(a, "trustedTimeForward", r.Forward)
	}
	if r.Held != "" {
		a = append(a, "trustedTimeHeld", r.Held)
	}
	return a
}

// openTrusted opens the trusted time on db when the configuration asks
// for it, and makes it the pipeline's expiry clock.
func (a *Agent) openTrusted(db *bolt.DB) error {
	if a.cfg.TrustedTime == nil {
		return nil
	}
	tc := *a.cfg.TrustedTime
	if tc.Clock == nil {
		tc.Clock = a.clock
	}
	c, err := trusted.Open(db, tc)
	if err != nil {
		return err
	}
	a.trusted = c
	a.cfg.Expiry = c
	return nil
}

// ErrNoTrustedTime is SetTimeFloor's error on an agent that judges expiry
// by its clock (no Config.TrustedTime) or has not opened agent.db yet.
var ErrNoTrustedTime = errors.New("runtime: the agent keeps no trusted time")

// SetTimeFloor replaces the trusted time's floor with at (trusted.Clock's
// SetFloor): the owner's signed time command (runtime/manage).
func (a *Agent) SetTimeFloor(at time.Time) error {
	a.mu.Lock()
	c := a.trusted
	if a.pipe == nil { // a.trusted is set before the pipeline, under a.mu
		c = nil
	}
	a.mu.Unlock()
	if c == nil {
		return ErrNoTrustedTime
	}
	return c.SetFloor(at)
}

// relayTime is what a link that took part in the handshake says of the
// relay's time and the round trip that bounds it (transport/link's
// Client).
type relayTime interface {
	RelayExchange() (relay, sent, received time.Time)
}

// establishedLevel is the level of the "time established" line of r: a
// time that agrees with the system clock to a second says no more than
// the wake line's trustedTime=SOURCE (and trustedTimeForward, when it
// moved the clock forward), and is logged at debug level, so that an
// empty wake logs two lines; one a second or more off is
// information.
func establishedLevel(r trusted.Reading) slog.Level {
	if d := r.Now.Sub(r.System); d > -time.Second && d < time.Second {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// linkedTime gives the trusted time the relay's time from l's handshake.
func (a *Agent) linkedTime(l Link) {
	if rt, ok := l.(relayTime); ok && a.trusted != nil {
		if relay, sent, received := rt.RelayExchange(); !received.IsZero() {
			a.trusted.SetRelayExchange(relay, sent, received)
		}
	}
}

// establishTime establishes the time the wake's drain judges expiry by,
// records how in the report and the log, and returns what records what it
// proves as the floor (trusted.Reading.Proven) in a transaction, for the
// caller to commit (with the wake's pulse); nil when there is nothing to
// keep.
func (w *wakeRun) establishTime() func(*bolt.Tx) error {
	a := w.a
	if a.trusted == nil {
		return nil
	}
	r, err := a.trusted.Establish()
	tr := &TimeReport{Source: string(r.Source), At: r.Now, Forward: r.Forward, Floor: r.Floor, Relay: r.Relay,
		Held: strings.Join(r.Held, "; ")}
	if tr.Held != "" {
		a.log.Warn("trusted time: a source's time was not kept as the floor (beyond what the device can bound, no second source agrees)",
			"held", tr.Held, "system", r.System.UTC().Format(time.RFC3339))
	}
	if errors.Is(err, trusted.ErrUntrusted) {
		tr.Untrusted = strings.Join(r.Why, "; ")
		a.log.Warn("no trusted time: the drain holds every record (nothing judged or acknowledged)", "why", tr.Untrusted,
			"system", r.System.UTC().Format(time.RFC3339))
	} else {
		a.log.Log(context.Background(), establishedLevel(r), "time established", "source", r.Source,
			"at", r.Now.UTC().Format(time.RFC3339Nano), "forward", r.Forward, "system", r.System.UTC().Format(time.RFC3339))
	}
	w.mu.Lock()
	w.rep.Time = tr
	w.mu.Unlock()
	if err != nil {
		return nil
	}
	c := a.trusted
	return func(tx *bolt.Tx) error { return c.Commit(tx, r.Now) }
}
