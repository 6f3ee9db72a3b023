package jsstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/clock/clocktest"
)

// TestAwaitPlacement: creating a replicated stream while a server of a
// forming cluster has not reported yet (error 10005) is tried again until
// it succeeds or placementWait passes; any other error ends it at once.
func TestAwaitPlacement(t *testing.T) {
	noPeers := &jetstream.APIError{Code: 500, ErrorCode: jsErrNoPeers, Description: "no suitable peers for placement"}
	other := &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeBadRequest, Description: "bad request"}
	for _, tt := range []struct {
		name     string
		failures int   // 10005 answers before the outcome
		outcome  error // after them
		want     error
		waits    int
	}{
		{"cluster forms", 3, nil, nil, 3},
		{"another error", 0, other, other, 0},
		{"never forms", 1 << 30, nil, noPeers, int(placementWait/(250*time.Millisecond)) + 1}, // tries at 0, ¼ s, …, 30 s
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktest.New(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC))
			c := &Conn{clk: clk}
			calls, done := 0, make(chan error, 1)
			created := clk.TimerCreated()
			go func() {
				done <- c.awaitPlacement(context.Background(), func() error {
					if calls++; calls <= tt.failures {
						return noPeers
					}
					return tt.outcome
				})
			}()
			waits := 0
			for {
				select {
				case err := <-done:
					if !errors.Is(err, tt.want) || waits != tt.waits {
						t.Fatalf("awaitPlacement = %v after %d waits, want %v after %d", err, waits, tt.want, tt.waits)
					}
					return
				case <-created:
					waits++
					created = clk.TimerCreated()
					clk.Advance(250 * time.Millisecond)
				}
			}
		})
	}
}
