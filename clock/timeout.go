package clock

import (
	"context"
	"sync"
	"time"
)

// WithTimeout is context.WithTimeout on c: the returned context is done
// when c passes now+d (a fake clock advanced past it, a scaled clock's
// compressed time reaching it), when ctx is done, or when cancel is called.
// Once the deadline has passed, Err reports context.DeadlineExceeded and
// context.Cause reports context.DeadlineExceeded too.
//
// On Real (and on nil) it is context.WithTimeout itself. On any other
// clock the context reports no Deadline: its deadline is a time on c, and
// code that reads Deadline (net, net/http) would take it for a time on
// the system clock.
//
// Which clock to pass is the package's rule (see the package doc): a wait
// for a peer or the network to answer passes Unscaled(c), a wait that is
// part of the device's schedule passes c.
func WithTimeout(ctx context.Context, c Clock, d time.Duration) (context.Context, context.CancelFunc) {
	return WithTimeoutCause(ctx, c, d, nil)
}

// WithTimeoutCause is WithTimeout that sets the context's cause to cause
// when the deadline passes (context.DeadlineExceeded when cause is nil),
// as context.WithTimeoutCause does. A cancel before the deadline sets
// context.Canceled.
func WithTimeoutCause(ctx context.Context, c Clock, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	if cause == nil {
		cause = context.DeadlineExceeded
	}
	c = Or(c)
	if _, ok := c.(realClock); ok {
		return context.WithTimeoutCause(ctx, d, cause)
	}
	inner, cancel := context.WithCancelCause(ctx)
	tc := &timeoutCtx{Context: inner}
	if d <= 0 {
		tc.expire(cancel, cause)
		return tc, func() { cancel(context.Canceled) }
	}
	t := c.NewTimer(d)
	go func() {
		select {
		case <-t.C():
			tc.expire(cancel, cause)
		case <-inner.Done():
			t.Stop()
		}
	}()
	return tc, func() { cancel(context.Canceled) }
}

// timeoutCtx is a context canceled by a timer on an injected clock. It
// tells a deadline that passed (DeadlineExceeded) from a cancel.
type timeoutCtx struct {
	context.Context // a context.WithCancelCause

	mu sync.Mutex
	// mu guards expired; it is held across the cancel, so Err never sees
	// the context done and expired not yet settled.
	expired bool // the deadline canceled the context, not ctx or cancel
}

// expire cancels the context with cause, unless ctx or cancel did first.
func (c *timeoutCtx) expire(cancel context.CancelCauseFunc, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Context.Err() != nil {
		return
	}
	c.expired = true
	cancel(cause)
	// ctx may have been canceled between the check and the cancel.
	c.expired = context.Cause(c.Context) == cause
}

// Err returns context.DeadlineExceeded when the deadline passed first, and
// otherwise the inner context's error.
func (c *timeoutCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.Context.Err()
	if err != nil && c.expired {
		return context.DeadlineExceeded
	}
	return err
}
