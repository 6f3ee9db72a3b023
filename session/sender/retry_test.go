package sender

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/governed"
)

// stepClock is a clock whose timers fire at once, moving its time to their
// deadline: Retry's waits take no time and are recorded.
type stepClock struct {
	now   time.Time
	waits []time.Duration
}

func (c *stepClock) Now() time.Time { return c.now }

func (c *stepClock) NewTimer(d time.Duration) clock.Timer {
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return firedTimer(ch)
}

type firedTimer chan time.Time

func (t firedTimer) C() <-chan time.Time { return t }
func (t firedTimer) Stop() bool          { return false }

// answers returns an Attempt that gives the answers in turn (the last one
// again once they run out) and counts the calls.
func answers(n *int, as ...Answer) func(context.Context, *governed.Object) (Answer, error) {
	return func(context.Context, *governed.Object) (Answer, error) {
		*n++
		return as[min(*n, len(as))-1], nil
	}
}

var (
	queued    = Answer{Status: 503, Queued: true, RetryAfter: 600}
	asleep30  = Answer{Status: 503, RetryAfter: 30}
	asleep    = Answer{Status: 503}
	delivered = Answer{Status: 200}
	// unconfirmed may or may not be queued.
	unconfirmed = Answer{Status: 503, Error: "store_unconfirmed", RetryAfter: 5}
)

func TestRetrySend(t *testing.T) {
	tests := []struct {
		name     string
		answers  []Answer
		wait     time.Duration
		scale    float64
		want     Outcome
		attempts int
		waits    []time.Duration
	}{
		{"queued at once", []Answer{queued}, time.Hour, 0, Queued, 1, nil},
		{"delivered at once", []Answer{delivered}, time.Hour, 0, Delivered, 1, nil},
		{"live rejection is final", []Answer{{Status: 200, RPCCode: -32602}}, time.Hour, 0, Rejected, 1, nil},
		{"refused without --wait", []Answer{asleep30, queued}, 0, 0, Refused, 1, nil},
		{"retried at Retry-After", []Answer{asleep30, asleep30, queued}, time.Hour, 0, Queued, 3, []time.Duration{30 * time.Second, 30 * time.Second}},
		{"Retry-After on a scaled relay's clock", []Answer{asleep30, delivered}, time.Hour, 10, Delivered, 2, []time.Duration{3 * time.Second}},
		{"no wait past the deadline", []Answer{asleep30, queued}, 29 * time.Second, 0, Refused, 1, nil},
		{"backoff doubles without Retry-After", []Answer{asleep, asleep, asleep, queued}, time.Hour, 0, Queued, 4,
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second}}, // jitter from zeros: the lower half
		{"unanswered is never retried", []Answer{{Status: 504}, delivered}, time.Hour, 0, Unanswered, 1, nil},
		{"queue full is retried", []Answer{{Status: 507, Error: "asleep_queue_full", RetryAfter: 5}, queued}, time.Hour, 0, Queued, 2, []time.Duration{5 * time.Second}},
		{"unconfirmed is retried", []Answer{unconfirmed, queued}, time.Hour, 0, Queued, 2, []time.Duration{5 * time.Second}},
		{"unconfirmed to the end", []Answer{unconfirmed, unconfirmed}, 6 * time.Second, 0, Unconfirmed, 2, []time.Duration{5 * time.Second}},
		{"unknown agent is final", []Answer{{Status: 404}, queued}, time.Hour, 0, Refused, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n int
			clk := &stepClock{now: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
			var retried []time.Duration
			r := &Retry{Attempt: answers(&n, tt.answers...), Wait: tt.wait, TimeScale: tt.scale, Clock: clk,
				Rand:    bytes.NewReader(make([]byte, 64)),
				OnRetry: func(_ Answer, d time.Duration) { retried = append(retried, d) }}
			res := r.Send(context.Background(), &governed.Object{ID: "obj-1"})
			if res.Outcome != tt.want || n != tt.attempts || len(res.Attempts) != n || res.Object != "obj-1" || res.Err != "" {
				t.Errorf("Send = %+v after %d attempts; want %s after %d", res, n, tt.want, tt.attempts)
			}
			if !cmp.Equal(clk.waits, tt.waits) || !cmp.Equal(retried, tt.waits) {
				t.Errorf("waits %v, OnRetry %v; want %v", clk.waits, retried, tt.waits)
			}
			if res.OK() != (tt.want == Queued || tt.want == Delivered) {
				t.Errorf("OK() = %v for %s", res.OK(), res.Outcome)
			}
		})
	}
}

func TestRetrySendFailure(t *testing.T) {
	r := &Retry{Attempt: func(context.Context, *governed.Object) (Answer, error) {
		return Answer{}, errors.New("connection refused")
	}, Wait: time.Hour}
	res := r.Send(context.Background(), &governed.Object{ID: "obj-1"})
	if res.Outcome != Failed || res.Err != "connection refused" || len(res.Attempts) != 0 || res.OK() {
		t.Errorf("Send = %+v, want outcome error", res)
	}
}

// TestRetrySendCancelled: a context that ends during a wait ends Send with
// the last answer and the context's error.
func TestRetrySendCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var n int
	attempt := answers(&n, asleep30, queued)
	r := &Retry{Attempt: func(ctx context.Context, o *governed.Object) (Answer, error) {
		defer cancel()
		return attempt(ctx, o)
	}, Wait: time.Hour, Clock: stoppedClock{}}
	res := r.Send(ctx, &governed.Object{ID: "obj-1"})
	if res.Outcome != Refused || n != 1 || res.Err != context.Canceled.Error() {
		t.Errorf("Send = %+v after %d attempts, want refused after 1 with %v", res, n, context.Canceled)
	}
}

// stoppedClock is a clock whose timers never fire.
type stoppedClock struct{}

func (stoppedClock) Now() time.Time                     { return time.Time{} }
func (stoppedClock) NewTimer(time.Duration) clock.Timer { return firedTimer(make(chan time.Time)) }
