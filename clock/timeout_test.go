package clock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/clock/clocktest"
)

var errSlow = errors.New("the peer was slow")

// checkLive fails the test when ctx is done. It runs after synctest.Wait,
// so the helper's goroutine has had every chance to cancel ctx.
func checkLive(t *testing.T, ctx context.Context, when string) {
	t.Helper()
	synctest.Wait()
	if err := ctx.Err(); err != nil {
		t.Fatalf("%s: context done (%v, cause %v), want it live", when, err, context.Cause(ctx))
	}
}

// checkExpired fails the test unless ctx is done with DeadlineExceeded and
// the cause want.
func checkExpired(t *testing.T, ctx context.Context, want error, when string) {
	t.Helper()
	synctest.Wait()
	select {
	case <-ctx.Done():
	default:
		t.Fatalf("%s: context not done, want it expired", when)
	}
	if err := ctx.Err(); err != context.DeadlineExceeded {
		t.Errorf("%s: Err() = %v, want context.DeadlineExceeded", when, err)
	}
	if got := context.Cause(ctx); got != want {
		t.Errorf("%s: Cause() = %v, want %v", when, got, want)
	}
}

// TestWithTimeoutFake: the context ends exactly when the fake clock passes
// the deadline, not a nanosecond before, and reports the cause.
func TestWithTimeoutFake(t *testing.T) {
	for _, cause := range []error{nil, errSlow} {
		synctest.Test(t, func(t *testing.T) {
			fc := clocktest.New(t0)
			ctx, cancel := clock.WithTimeoutCause(context.Background(), fc, 30*time.Second, cause)
			defer cancel()
			if _, ok := ctx.Deadline(); ok {
				t.Error("Deadline() reported a deadline on the fake clock")
			}
			fc.Advance(30*time.Second - time.Nanosecond)
			checkLive(t, ctx, "1 ns before the deadline")
			fc.Advance(time.Nanosecond)
			want := cause
			if want == nil {
				want = context.DeadlineExceeded
			}
			checkExpired(t, ctx, want, "at the deadline")
		})
	}
}

// TestWithTimeoutScaled: on a scaled clock the deadline is in scaled time;
// on Unscaled of it, in the base clock's time.
func TestWithTimeoutScaled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := clocktest.New(t0)
		sc, err := clock.NewScaled(base, 60)
		if err != nil {
			t.Fatal(err)
		}
		scaled, cancel := clock.WithTimeout(context.Background(), sc, time.Minute)
		defer cancel()
		network, cancel2 := clock.WithTimeout(context.Background(), clock.Unscaled(sc), time.Minute)
		defer cancel2()
		base.Advance(time.Second - time.Nanosecond)
		checkLive(t, scaled, "59.99… s of scaled time")
		base.Advance(time.Nanosecond)
		checkExpired(t, scaled, context.DeadlineExceeded, "a minute of scaled time")
		checkLive(t, network, "one real second")
		base.Advance(59 * time.Second)
		checkExpired(t, network, context.DeadlineExceeded, "a real minute")
	})
}

// TestWithTimeoutCancel: a cancel before the deadline is Canceled, stops
// the timer, and the deadline passing later changes nothing; a parent's
// cancel passes its cause through.
func TestWithTimeoutCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clocktest.New(t0)
		ctx, cancel := clock.WithTimeoutCause(context.Background(), fc, time.Second, errSlow)
		cancel()
		synctest.Wait()
		if fc.Pending() != 0 {
			t.Errorf("%d timers pending after cancel, want 0", fc.Pending())
		}
		fc.Advance(time.Hour)
		if ctx.Err() != context.Canceled || context.Cause(ctx) != context.Canceled {
			t.Errorf("after cancel: Err() = %v, Cause() = %v, want context.Canceled for both", ctx.Err(), context.Cause(ctx))
		}

		parent, stop := context.WithCancelCause(context.Background())
		ctx, cancel = clock.WithTimeoutCause(parent, fc, time.Second, errSlow)
		defer cancel()
		stop(errors.New("shutting down"))
		synctest.Wait()
		fc.Advance(time.Hour)
		if ctx.Err() != context.Canceled || context.Cause(ctx).Error() != "shutting down" {
			t.Errorf("after the parent's cancel: Err() = %v, Cause() = %v, want Canceled, shutting down", ctx.Err(), context.Cause(ctx))
		}
	})
}

// TestWithTimeoutNow: a deadline not in the future has passed already.
func TestWithTimeoutNow(t *testing.T) {
	fc := clocktest.New(t0)
	for _, d := range []time.Duration{0, -time.Second} {
		ctx, cancel := clock.WithTimeoutCause(context.Background(), fc, d, errSlow)
		if ctx.Err() != context.DeadlineExceeded || context.Cause(ctx) != errSlow {
			t.Errorf("WithTimeoutCause(%v): Err() = %v, Cause() = %v, want DeadlineExceeded, %v", d, ctx.Err(), context.Cause(ctx), errSlow)
		}
		cancel()
	}
}

// TestWithTimeoutReal: on the real clock (and nil) it is
// context.WithTimeoutCause, with a Deadline; synctest's bubble supplies
// the time, so nothing waits.
func TestWithTimeoutReal(t *testing.T) {
	for _, c := range []clock.Clock{clock.Real, nil} {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			ctx, cancel := clock.WithTimeoutCause(context.Background(), c, time.Minute, errSlow)
			defer cancel()
			if dl, ok := ctx.Deadline(); !ok || !dl.Equal(start.Add(time.Minute)) {
				t.Errorf("Deadline() = %v, %v, want %v", dl, ok, start.Add(time.Minute))
			}
			time.Sleep(time.Minute - time.Nanosecond)
			checkLive(t, ctx, "1 ns before the deadline")
			time.Sleep(time.Nanosecond)
			checkExpired(t, ctx, errSlow, "at the deadline")
		})
	}
}
