// Package timesync sets a QEMU test guest's wall clock from the host's
// with sub-millisecond precision, and measures what is left of the offset.
//
// The guest's clock starts from the emulated PL031 RTC, which counts whole
// seconds, so a guest boots up to a second off the host. Processes on
// time-scaled clocks (clock.NewScaledAt) multiply that offset by their
// scale: at 120, a second becomes two minutes, over the DID Bearer tokens'
// 60 s skew. The host serves its time (Handler, nanoseconds since the Unix
// epoch) over QEMU user networking; the guest asks a few times, keeps the
// answer with the shortest round trip, and steps its clock by the
// estimated offset (the host's time minus the midpoint of the round trip,
// as NTP's offset, RFC 5905 Section 8), then asks once more to measure the
// residual offset. The error of each estimate is at most half its round
// trip.
package timesync

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Handler answers every request with the host's time, in nanoseconds
// since the Unix epoch.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, time.Now().UnixNano())
	})
}

// Sample is one exchange with the host.
type Sample struct {
	// Offset is the host's time minus the guest's at the midpoint of the
	// round trip: positive when the guest is behind.
	Offset time.Duration `json:"offset"`
	// RTT is the round trip; Offset is good to RTT/2.
	RTT time.Duration `json:"rtt"`
}

func (s Sample) String() string { return fmt.Sprintf("%v ± %v", s.Offset, s.RTT/2) }

// Query asks url for the host's time once.
func Query(ctx context.Context, c *http.Client, url string) (Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Sample{}, err
	}
	t0 := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return Sample{}, fmt.Errorf("timesync: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64))
	t1 := time.Now()
	resp.Body.Close()
	if err != nil {
		return Sample{}, fmt.Errorf("timesync: %w", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if resp.StatusCode != http.StatusOK || err != nil {
		return Sample{}, fmt.Errorf("timesync: %s answered %d %q", url, resp.StatusCode, b)
	}
	rtt := t1.Sub(t0) // monotonic
	mid := t0.Round(0).Add(rtt / 2)
	return Sample{Offset: time.Unix(0, ns).Sub(mid), RTT: rtt}, nil
}

// Best asks url n times and returns the sample with the shortest round
// trip, the least disturbed by scheduling on either side.
func Best(ctx context.Context, c *http.Client, url string, n int) (Sample, error) {
	var best Sample
	for i := range n {
		s, err := Query(ctx, c, url)
		if err != nil {
			return best, err
		}
		if i == 0 || s.RTT < best.RTT {
			best = s
		}
	}
	return best, nil
}

// Stepper sets the system clock: unix.ClockSettime of CLOCK_REALTIME in
// the guest.
type Stepper func(time.Time) error

// Sync steps the clock by Best's offset of n exchanges, then measures the
// residual offset the same way. It returns the offset before and after.
func Sync(ctx context.Context, url string, n int, step Stepper) (before, after Sample, err error) {
	c := &http.Client{Timeout: 10 * time.Second}
	if before, err = Best(ctx, c, url, n); err != nil {
		return before, after, err
	}
	if err := step(time.Now().Add(before.Offset)); err != nil {
		return before, after, fmt.Errorf("timesync: setting the clock: %w", err)
	}
	after, err = Best(ctx, c, url, n)
	return before, after, err
}
