package relay

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// TestRetryAfterStaysInPublishedWindow posts many times at one instant (a
// wake storm) to agents with a short published window and checks that
// every Retry-After points inside that window: at or after its start, before
// its end, never 0, and spread over more than one second.
func TestRetryAfterStaysInPublishedWindow(t *testing.T) {
	const posts = 40
	short := &wire.Window{Minute: 30, LengthSec: 60} // 12:30:00-12:31:00, hourly
	tests := []struct {
		name     string
		mode     string
		window   *wire.Window
		nextWake time.Time // announced by the device; zero for none
		lo, hi   int       // want lo <= Retry-After < hi
	}{
		// An operator wake in 2 h: its window is the published 60 s, not
		// the default five minutes.
		{"sleep, operator wake in 2h", "sleep", &wire.Window{Minute: 11, LengthSec: 60}, t0.Add(2 * time.Hour), 7200, 7260},
		{"sleep, operator wake in 2h, default window", "sleep", &wire.Window{Minute: 11}, t0.Add(2 * time.Hour), 7200, 7500},
		{"hourly_wake, next window", "hourly_wake", short, time.Time{}, 1800, 1860},
		{"hourly_wake, announced wake in 2.5h", "hourly_wake", short, t0.Add(150 * time.Minute), 9000, 9060},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.Rand = rand.NewChaCha8([32]byte{byte(i)}) })
			dev, alice := didtest.Key(t, 1), didtest.Key(t, 2)
			h.admit(t, dev) // more than probation's 5 messages per sender
			o := deviceOpts{window: tt.window}
			c := h.device(t, dev, tt.mode, o)
			st := h.state(t, dev, c.Hello(), tt.mode, o)
			if !tt.nextWake.IsZero() {
				st.NextWake = tt.nextWake.Unix()
			}
			if _, err := c.Publish(context.Background(), st); err != nil {
				t.Fatal(err)
			}
			c.Close()
			<-h.relay.Link().Gone(dev.DID().String()) // the relay notices the close asynchronously
			seen := map[int]bool{}
			first, last := tt.hi, tt.lo
			for n := range posts {
				r := h.post(t, dev.DID(), alice, "1.0", sendV1)
				ra, err := strconv.Atoi(r.header.Get("Retry-After"))
				if r.status != 503 || err != nil || ra < tt.lo || ra >= tt.hi {
					t.Fatalf("post %d at %s: %d Retry-After %q, want 503 and %d <= n < %d", n, h.clk.Now().Format(time.TimeOnly), r.status, r.header.Get("Retry-After"), tt.lo, tt.hi)
				}
				if got := r.json["retryAfterSec"]; got != float64(ra) {
					t.Errorf("post %d: retryAfterSec %v != Retry-After %d", n, got, ra)
				}
				seen[ra] = true
				first, last = min(first, ra), max(last, ra)
			}
			t.Logf("%d posts: Retry-After %d to %d, %d distinct", posts, first, last, len(seen))
			if len(seen) < 2 {
				t.Errorf("%d posts got %d distinct Retry-After values, want them spread across the window", posts, len(seen))
			}
		})
	}
}
