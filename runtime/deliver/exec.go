package deliver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/torpor-dev/torpor/clock"
)

// Exec runs a program per delivery with the delivery as JSON on its
// standard input. The environment also carries TORPOR_PURPOSE,
// TORPOR_OBJECT_ID, TORPOR_ISSUER and, for actions, TORPOR_IDEMPOTENCY_KEY.
type Exec struct {
	// Path is the program; Args its arguments (without the program name).
	Path string
	Args []string
	// Env is added to the agent's environment.
	Env []string
	// Dir is the working directory; empty means the agent's.
	Dir string
	// Timeout kills the program when it runs longer. Zero means one minute.
	Timeout time.Duration
	// Clock measures the durations, and clock.Unscaled(Clock) the timeout.
	// Nil means clock.Real.
	Clock clock.Clock
}

// Deliver implements Handler.
func (e *Exec) Deliver(ctx context.Context, d Delivery) (Outcome, error) {
	in, err := json.Marshal(d)
	if err != nil {
		return Outcome{}, fmt.Errorf("deliver: encoding delivery: %w (%w)", err, ErrNotStarted)
	}
	c := clock.Or(e.Clock)
	start := c.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(context.Canceled)

	cmd := exec.CommandContext(ctx, e.Path, e.Args...)
	cmd.Dir = e.Dir
	cmd.Env = append(os.Environ(), e.Env...)
	cmd.Env = append(cmd.Env,
		"TORPOR_PURPOSE="+d.Purpose,
		"TORPOR_OBJECT_ID="+d.ObjectID,
		"TORPOR_ISSUER="+d.Issuer,
		"TORPOR_IDEMPOTENCY_KEY="+d.IdempotencyKey,
	)
	cmd.Stdin = bytes.NewReader(in)
	stdout := &limitedBuffer{n: maxReceipt}
	stderr := &limitedBuffer{n: 2 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 5 * time.Second // do not hang on a grandchild holding the pipes

	if err := cmd.Start(); err != nil {
		return Outcome{Detail: err.Error()}, fmt.Errorf("deliver: starting %s: %w (%w)", e.Path, err, ErrNotStarted)
	}
	stop := e.armTimeout(ctx, c, cancel)
	werr := cmd.Wait()
	stop()
	o := Outcome{
		OK:       werr == nil,
		Receipt:  stdout.buf,
		EffectID: effectID(stdout.buf),
		Duration: c.Now().Sub(start),
	}
	var ee *exec.ExitError
	switch {
	case werr == nil:
		o.Detail = "exit 0"
	case errors.As(werr, &ee) && ctx.Err() == nil:
		// The program ran and declined: an outcome, not a hand-off failure.
		o.Detail = fmt.Sprintf("%v: %s", ee, bytes.TrimSpace(stderr.buf))
	default:
		o.Detail = werr.Error()
		if cause := context.Cause(ctx); cause != nil {
			werr = cause
		}
		return o, fmt.Errorf("deliver: %s: %w", e.Path, werr)
	}
	return o, nil
}

var errTimeout = errors.New("deliver: handler timed out")

// armTimeout cancels the handler's context with cause errTimeout after the
// timeout. The program is outside the agent, so the timeout is in real
// time, on clock.Unscaled(c) (the clock package's rule). The returned
// function disarms it.
func (e *Exec) armTimeout(ctx context.Context, c clock.Clock, cancel context.CancelCauseFunc) (stop func()) {
	d := e.Timeout
	if d == 0 {
		d = time.Minute
	}
	tctx, stop := clock.WithTimeoutCause(ctx, clock.Unscaled(c), d, errTimeout)
	context.AfterFunc(tctx, func() {
		if context.Cause(tctx) == errTimeout {
			cancel(errTimeout)
		}
	})
	return stop
}
