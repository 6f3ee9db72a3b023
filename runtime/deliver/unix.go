package deliver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/internal/http1"
)

// Unix POSTs each delivery as JSON (Content-Type application/json) to
// http://torpor/<Path> over the Unix domain socket Socket. The application
// answers with a 2xx status to accept; the response body is the receipt,
// and a Torpor-Effect-Id response header (or an "effectId" member of a JSON
// body) names the effect at its system of record.
//
// The request is HTTP/1.1 (RFC 9112), one per connection, written and read
// by internal/http1 rather than net/http, which torpor-agent does not link
// (docs/footprint.md). The answer's body may come with Content-Length,
// chunked, or until the application closes the connection.
type Unix struct {
	// Socket is the Unix domain socket's file name.
	Socket string
	// Path is the HTTP request path; empty means "/".
	Path string
	// Timeout bounds one hand-off; zero means one minute. Clock measures
	// the durations, and clock.Unscaled(Clock) the timeout; nil means
	// clock.Real.
	Timeout time.Duration
	Clock   clock.Clock
}

// NewUnix returns a handler posting to socket.
func NewUnix(socket, path string, c clock.Clock) *Unix {
	return &Unix{Socket: socket, Path: path, Clock: c}
}

// Deliver implements Handler.
func (u *Unix) Deliver(ctx context.Context, d Delivery) (Outcome, error) {
	body, err := json.Marshal(d)
	if err != nil {
		return Outcome{}, fmt.Errorf("deliver: encoding delivery: %w (%w)", err, ErrNotStarted)
	}
	c := clock.Or(u.Clock)
	start := c.Now()
	timeout := u.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	// The application answers outside the agent: real time (the clock
	// package's rule).
	ctx, cancel := clock.WithTimeoutCause(ctx, clock.Unscaled(c), timeout, errTimeout)
	defer cancel()
	path := u.Path
	if path == "" {
		path = "/"
	}
	req := &http1.Request{Method: "POST", Target: path, Host: "torpor",
		Header: []http1.Field{{Name: "Content-Type", Value: "application/json"}, {Name: "Connection", Value: "close"}},
		Body:   body}
	o, err := u.post(ctx, req)
	o.Duration = c.Now().Sub(start)
	return o, err
}

// post sends req on a new connection to the socket and reads the answer.
// The context's end closes the connection, and its cause is the error.
func (u *Unix) post(ctx context.Context, req *http1.Request) (Outcome, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", u.Socket)
	if err != nil {
		err = ctxCause(ctx, err)
		o := Outcome{Detail: err.Error()}
		if notConnected(err) {
			return o, fmt.Errorf("deliver: %s: %w (%w)", u.Socket, err, ErrNotStarted)
		}
		return o, fmt.Errorf("deliver: %s: %w", u.Socket, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := http1.WriteRequest(conn, req); err != nil {
		err = ctxCause(ctx, err)
		return Outcome{Detail: err.Error()}, fmt.Errorf("deliver: %s: %w", u.Socket, err)
	}
	resp, err := http1.ReadResponse(bufio.NewReader(conn), req.Method)
	if err != nil {
		err = ctxCause(ctx, err)
		return Outcome{Detail: err.Error()}, fmt.Errorf("deliver: %s: %w", u.Socket, err)
	}
	lb := &limitedBuffer{n: maxReceipt}
	_, rerr := io.Copy(lb, resp.Body)
	o := Outcome{
		OK:       resp.StatusCode/100 == 2 && rerr == nil,
		Detail:   resp.Status,
		Receipt:  lb.buf,
		EffectID: resp.Header.Get("Torpor-Effect-Id"),
	}
	if o.EffectID == "" {
		o.EffectID = effectID(lb.buf)
	}
	if rerr != nil {
		return o, fmt.Errorf("deliver: reading answer from %s: %w", u.Socket, ctxCause(ctx, rerr))
	}
	return o, nil
}

// ctxCause returns err, and the context's cause beside it when the
// context ended (the deadline AfterFunc set is what failed the I/O).
func ctxCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("%w: %w", cause, err)
	}
	return err
}

// notConnected reports whether err says the connection was never made,
// so the application cannot have seen the request.
func notConnected(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT)
}
