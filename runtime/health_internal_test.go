package runtime

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// TestReadHealthOnceAWake: the board's health is read once a wake, so the
// statuses of one wake carry the same readings; without
// Config.Status.Health a wake reads none.
func TestReadHealthOnceAWake(t *testing.T) {
	calls := 0
	a := &Agent{cfg: Config{Status: StatusSources{Health: func() *wire.StatusHealth { calls++; return &wire.StatusHealth{UptimeS: int64(calls)} }}},
		clock: clocktest.New(time.Unix(0, 0)), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	w := &wakeRun{a: a, ctx: context.Background()}
	if h1, h2 := w.readHealth(), w.readHealth(); h1 == nil || h1 != h2 || calls != 1 {
		t.Errorf("two reads of one wake = %+v, %+v with %d calls; want one reading", h1, h2, calls)
	}
	a.cfg.Status.Health = nil
	if h := (&wakeRun{a: a, ctx: context.Background()}).readHealth(); h != nil {
		t.Errorf("readHealth with no Config.Status.Health = %+v", h)
	}
}

// TestReadHealthTimeout: a reading stuck past HealthTimeout leaves the
// status without health, and the wake goes on.
func TestReadHealthTimeout(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	clk := clocktest.New(time.Unix(0, 0))
	a := &Agent{cfg: Config{Status: StatusSources{Health: func() *wire.StatusHealth { <-stuck; return &wire.StatusHealth{UptimeS: 1} }}},
		clock: clk, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	w := &wakeRun{a: a, ctx: context.Background()}
	created := clk.TimerCreated()
	got := make(chan *wire.StatusHealth)
	go func() { got <- w.readHealth() }()
	<-created
	clk.Advance(HealthTimeout)
	if h := <-got; h != nil {
		t.Errorf("readHealth past the timeout = %+v; want nil", h)
	}
}

// TestReadHealthTimeoutIsRealTime: on a scaled clock (--time-scale) the
// timeout is HealthTimeout of real time, not of the scaled clock: at a
// scale of 120 a reading that takes a real second (a slow board, an
// emulated one) is still in the status.
func TestReadHealthTimeoutIsRealTime(t *testing.T) {
	slow := make(chan struct{})
	clk := clocktest.New(time.Unix(0, 0))
	scaled, err := clock.NewScaled(clk, 120)
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{cfg: Config{Status: StatusSources{Health: func() *wire.StatusHealth { <-slow; return &wire.StatusHealth{UptimeS: 1} }}},
		clock: scaled, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	w := &wakeRun{a: a, ctx: context.Background()}
	created := clk.TimerCreated()
	got := make(chan *wire.StatusHealth)
	go func() { got <- w.readHealth() }()
	<-created
	clk.Advance(time.Second) // 120 s of the scaled clock
	close(slow)
	if h := <-got; h == nil {
		t.Errorf("readHealth of a reading that took a real second, at a scale of 120 = nil; want the reading")
	}
}
