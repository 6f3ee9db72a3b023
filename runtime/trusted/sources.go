package trusted

import (
	"fmt"
	"time"
)

// Kernel reads what the kernel knows about the time.
type Kernel interface {
	// NTP returns the kernel's synchronisation state (adjtimex(2)).
	NTP() (NTPState, error)
	// RTC reads the RTC device name (rtc0).
	RTC(name string) (time.Time, error)
	// Boot reads CLOCK_BOOTTIME and the boot id.
	Boot() (Boot, error)
}

// NTPState is the kernel's clock synchronisation state.
type NTPState struct {
	// Synced: the clock state is not TIME_ERROR and STA_UNSYNC is clear.
	Synced bool
	// MaxError is the kernel's maximum error estimate.
	MaxError time.Duration
}

// Boot identifies a moment within one boot.
type Boot struct {
	// ID is the kernel's boot id (/proc/sys/kernel/random/boot_id).
	ID string
	// Since is CLOCK_BOOTTIME: the time since boot, suspends included.
	Since time.Duration
}

// ntp reports whether the kernel's clock is synchronised within bound.
func (c *Clock) ntp(r *Reading) bool {
	st, err := c.cfg.Kernel.NTP()
	switch {
	case err != nil:
		r.Why = append(r.Why, "ntp: "+err.Error())
	case !st.Synced:
		r.Why = append(r.Why, "ntp: the kernel's clock is not synchronised (STA_UNSYNC)")
	case st.MaxError > c.cfg.MaxError:
		r.Why = append(r.Why, fmt.Sprintf("ntp: maximum error %v exceeds %v", st.MaxError, c.cfg.MaxError))
	default:
		return true
	}
	return false
}

// rtc reports whether the board's RTC kept time and the system clock
// agrees with it.
func (c *Clock) rtc(r *Reading) bool {
	if c.cfg.RTC == "" {
		r.Why = append(r.Why, "rtc: the board has none")
		return false
	}
	t, err := c.cfg.Kernel.RTC(c.cfg.RTC)
	switch {
	case err != nil:
		r.Why = append(r.Why, fmt.Sprintf("rtc: %s: %v", c.cfg.RTC, err))
	case !r.Floor.IsZero() && t.Before(r.Floor.Add(-c.tolerance())):
		r.Why = append(r.Why, fmt.Sprintf("rtc: %s reads %s, before the floor %s: it lost time",
			c.cfg.RTC, stamp(t), stamp(r.Floor)))
	case t.Sub(r.System).Abs() > RTCTolerance:
		r.Why = append(r.Why, fmt.Sprintf("rtc: %s reads %s and the system clock %s: the system clock was not set from it",
			c.cfg.RTC, stamp(t), stamp(r.System)))
	default:
		return true
	}
	return false
}

// relayNow reports whether the relay's time can be used, sets r.Relay to
// its estimate now and returns its lower bound now. The relay stamped its
// statement between the device's request (sent) and the statement's
// arrival (received), in whole seconds truncated: the relay's clock at
// received is in [stated, stated+delay+RelayResolution], delay being the
// round trip received−sent. The estimate is the midpoint of the round
// trip, the on-wire offset of RFC 5905, Section 8, with T2 = T3 (one
// stamp): θ = stated − (sent+received)/2. Each is advanced by the system
// clock's time since received (on the monotonic clock where the readings
// carry it). The relay is before the floor only when even the upper end
// of that interval is more than FloorTolerance before it: a delay is not
// a lag.
func (c *Clock) relayNow(r *Reading, sys time.Time) (time.Time, bool) {
	s := c.relay
	if s.received.IsZero() {
		r.Why = append(r.Why, "relay: no link handshake yet")
		return time.Time{}, false
	}
	lo := s.time.Add(sys.Sub(s.received))
	delay := max(s.received.Sub(s.sent), 0)
	r.Relay = lo.Add(delay / 2)
	hi := lo.Add(delay + RelayResolution)
	if !r.Floor.IsZero() && hi.Before(r.Floor.Add(-c.tolerance())) {
		r.Why = append(r.Why, fmt.Sprintf("relay: its time %s is before the floor %s (by more than the handshake's round trip %v, %v of whole seconds and %v)",
			stamp(lo), stamp(r.Floor), delay, RelayResolution, c.tolerance()))
		return time.Time{}, false
	}
	r.relayHi = hi
	return lo, true
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
