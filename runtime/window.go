package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/wake"
)

// ErrAsleep is returned by operations that need a wake in progress (Extend,
// Drain) when the agent is not awake, or has no link to its relay.
var ErrAsleep = errors.New("runtime: no wake in progress")

// Window returns the hourly window in force: the configured one, or the
// one SetWindow set.
func (a *Agent) Window() wake.Window {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.window
}

// SetWindow changes the hourly window's length and offset at runtime (zero
// length: wake.DefaultLength). Like a mode set at runtime, the change
// persists in bbolt until the configured window itself changes. The agent
// re-plans at once, as after SetMode.
func (a *Agent) SetWindow(length, offset time.Duration) error {
	win := a.Window()
	win.Length, win.Offset = length, offset
	if err := win.Validate(); err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	err := a.updateCycle(func(c *cycle) {
		c.Length, c.Offset = length, offset
		c.ConfigLength, c.ConfigOffset = a.cfg.Schedule.WindowLength, a.cfg.Schedule.WindowOffset
		c.WindowSet = true
	})
	if err != nil {
		return fmt.Errorf("runtime: recording the window: %w", err)
	}
	a.mu.Lock()
	a.window = win
	a.replanLocked()
	a.mu.Unlock()
	a.log.Info("window changed", "length", win.Length, "offset", win.Offset)
	return nil
}

// adoptWakeSecond makes sec, the second of its wake minute the relay
// assigned (link wire.Accepted.WakeSecond), the one the hourly window
// opens at from the next window on, in place of the one the agent derives
// (wake.WakeSecond). It is kept in the cycle state, so it holds across
// restarts, and the wake plans its next wake there, which it announces
// when it ends: the published window (its offset carries the second) and
// the card's next window then point at the assigned second. When this
// wake is a window's, a window at the new second that opened before this
// wake ends is not planned (plan): this wake is that hour's, so a later
// second does not make the agent link again for the rest of it. A short
// wake (booted outside the window) plans the window as before.
func (w *wakeRun) adoptWakeSecond(sec int) error {
	a := w.a
	if a.Window().Second == sec {
		return nil
	}
	win := a.Window()
	win.Second = sec
	if err := win.Validate(); err != nil {
		return fmt.Errorf("runtime: the relay's wake second: %w", err)
	}
	if err := a.updateCycle(func(c *cycle) { c.Second, c.SecondSet = sec, true }); err != nil {
		return fmt.Errorf("runtime: recording the wake second: %w", err)
	}
	end, live := w.windowEnd(), w.live()
	a.mu.Lock()
	a.window.Second = sec
	if live {
		a.secondFrom = end
	}
	a.mu.Unlock()
	mode, _ := w.schedule()
	next := a.nextWake(end)
	w.setSchedule(mode, next)
	a.log.Info("wake second assigned by the relay", "second", sec, "nextWake", next.UTC().Format(time.RFC3339))
	return nil
}

// secondAdopted returns Agent.secondFrom.
func (a *Agent) secondAdopted() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.secondFrom
}

// updateCycle changes the cycle state in bbolt, when the store is open.
func (a *Agent) updateCycle(change func(*cycle)) error {
	p := a.Pipeline()
	if p == nil {
		return nil
	}
	return p.db.Update(func(tx *bolt.Tx) error {
		c, err := loadCycle(tx)
		if err != nil {
			return err
		}
		change(&c)
		return putCBOR(tx, keyCycle, c)
	})
}

// replanLocked ends the sleep or wake planned on the schedule before a
// change. a.mu must be held.
func (a *Agent) replanLocked() {
	close(a.changed)
	a.changed = make(chan struct{})
}

// Extend keeps the wake in progress going until at least until (an
// operator's wake-now): the window's end moves, never earlier, and the next
// wake is planned after it. A short wake (booted outside the window) that
// is extended stays linked until the new end. It returns the wake's end;
// a zero end means the wake has no end (always_on, session). It returns
// ErrAsleep when no wake is in progress, or the wake in progress is past
// staying live (announcing its next wake).
func (a *Agent) Extend(until time.Time) (time.Time, error) {
	a.mu.Lock()
	w := a.cur
	a.mu.Unlock()
	if w == nil {
		return time.Time{}, ErrAsleep
	}
	next := a.nextWake(until) // before w.mu: the lock order is a.mu, then w.mu
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ending {
		return time.Time{}, fmt.Errorf("%w: the wake is ending", ErrAsleep)
	}
	if w.end.IsZero() || !until.After(w.end) {
		return w.end, nil
	}
	w.end, w.isLive, w.next = until, true, next
	w.rep.End, w.rep.NextWake = until, next
	select {
	case w.kick <- struct{}{}:
	default: // a kick is pending; it reads the latest end
	}
	a.log.Info("window extended", "windowEnd", until.UTC().Format(time.RFC3339))
	return until, nil
}

// windowEnd returns the wake's end.
func (w *wakeRun) windowEnd() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.end
}

// windowContext returns a context that ends at the window's end on the
// agent's clock (never, for a zero end; later, when Extend moves it) or
// when changed is closed (the schedule changed).
func (w *wakeRun) windowContext(ctx context.Context, changed <-chan struct{}) (context.Context, context.CancelFunc) {
	a := w.a
	wctx, cancel := context.WithCancel(ctx)
	var t clock.Timer
	arm := func() <-chan time.Time {
		if t != nil {
			t.Stop()
		}
		end := w.windowEnd()
		if end.IsZero() {
			return nil
		}
		t = a.clock.NewTimer(end.Sub(a.clock.Now()))
		return t.C()
	}
	tc := arm()
	go func() {
		defer cancel()
		for {
			select {
			case <-w.kick:
				tc = arm()
				continue
			case <-tc:
			case <-changed:
			case <-wctx.Done():
			}
			if t != nil {
				t.Stop()
			}
			return
		}
	}()
	return wctx, cancel
}
