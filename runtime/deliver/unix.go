package deliver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/torpor-dev/torpor/clock"
)

// Unix POSTs each delivery as JSON (Content-Type application/json) to
// http://torpor/<Path> over the Unix domain socket Socket. The application
// answers with a 2xx status to accept; the response body is the receipt,
// and a Torpor-Effect-Id response header (or an "effectId" member of a JSON
// body) names the effect at its system of record.
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

	client *http.Client
}

// NewUnix returns a handler posting to socket.
func NewUnix(socket, path string, c clock.Clock) *Unix {
	u := &Unix{Socket: socket, Path: path, Clock: c}
	u.client = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		DisableKeepAlives: true,
	}}
	return u
}

// Deliver implements Handler.
func (u *Unix) Deliver(ctx context.Context, d Delivery) (Outcome, error) {
	if u.client == nil {
		*u = *NewUnix(u.Socket, u.Path, u.Clock)
	}
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
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://torpor"+path, bytes.NewReader(body))
	if err != nil {
		return Outcome{}, fmt.Errorf("deliver: %w (%w)", err, ErrNotStarted)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := u.client.Do(req)
	if err != nil {
		o := Outcome{Detail: err.Error(), Duration: c.Now().Sub(start)}
		if notConnected(err) {
			return o, fmt.Errorf("deliver: %s: %w (%w)", u.Socket, err, ErrNotStarted)
		}
		return o, fmt.Errorf("deliver: %s: %w", u.Socket, err)
	}
	defer resp.Body.Close()
	lb := &limitedBuffer{n: maxReceipt}
	_, rerr := io.Copy(lb, resp.Body)
	o := Outcome{
		OK:       resp.StatusCode/100 == 2 && rerr == nil,
		Detail:   resp.Status,
		Receipt:  lb.buf,
		EffectID: resp.Header.Get("Torpor-Effect-Id"),
		Duration: c.Now().Sub(start),
	}
	if o.EffectID == "" {
		o.EffectID = effectID(lb.buf)
	}
	if rerr != nil {
		return o, fmt.Errorf("deliver: reading answer from %s: %w", u.Socket, rerr)
	}
	return o, nil
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
