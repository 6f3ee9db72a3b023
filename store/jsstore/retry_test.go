package jsstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/store/queue"
)

// TestRetry: a failure is tried again after 50 ms, then 100 ms, 200 ms
// (on the injected clock), up to 5 tries; a lost race, corrupt data and
// success end it at once.
func TestRetry(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	c := &Conn{clk: clk}
	flaky := errors.New("nats: timeout")
	for _, tt := range []struct {
		name      string
		fails     int   // failures before fn succeeds
		final     error // what fn returns after them (nil: success)
		wantCalls int
		wantErr   error
		waited    time.Duration
	}{
		{"succeeds after two failures", 2, nil, 3, nil, 150 * time.Millisecond},
		{"gives up after five", 99, nil, 5, flaky, 750 * time.Millisecond},
		{"a lost race is not a failure", 0, errConflict, 1, errConflict, 0},
		{"corrupt data is not a failure", 1, fmt.Errorf("%w: x", queue.ErrCorrupt), 2, queue.ErrCorrupt, 50 * time.Millisecond},
	} {
		start, calls := clk.Now(), 0
		done := make(chan error, 1)
		go func() {
			done <- c.retry(context.Background(), func() error {
				if calls++; calls <= tt.fails {
					return flaky
				}
				return tt.final
			})
		}()
		var err error
	wait:
		for {
			// Ask for the next timer before looking for one: a timer
			// created between a check and the ask would be missed, and the
			// test would wait forever (it did, once, under -race in CI).
			created := clk.TimerCreated()
			if clk.Pending() == 0 {
				select {
				case err = <-done:
					break wait
				case <-created:
				}
			}
			for clk.Pending() > 0 {
				clk.Advance(time.Millisecond)
			}
		}
		if calls != tt.wantCalls || !errors.Is(err, tt.wantErr) || err == nil != (tt.wantErr == nil) {
			t.Errorf("%s: %d calls, %v; want %d calls, %v", tt.name, calls, err, tt.wantCalls, tt.wantErr)
		}
		if got := clk.Now().Sub(start); got != tt.waited {
			t.Errorf("%s: waited %v, want %v", tt.name, got, tt.waited)
		}
	}
}
