package sender

import (
	"context"
	"crypto/rand"
	"io"
	"math/big"
	"net/http"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/governed"
)

// Outcome is what became of a message Retry sent.
type Outcome string

const (
	// Delivered: a live agent took it (200).
	Delivered Outcome = "delivered"
	// Queued: the relay stored it for the sleeping agent (503 queued).
	Queued Outcome = "queued"
	// Rejected: a live agent refused it (200 with a JSON-RPC error).
	Rejected Outcome = "rejected"
	// Refused: the relay refused it and stored nothing.
	Refused Outcome = "refused"
	// Unanswered: the agent's device did not answer in time (504); it may
	// or may not have processed the message.
	Unanswered Outcome = "unanswered"
	// Unconfirmed: the relay's store took it but did not confirm it (503
	// store_unconfirmed); it may or may not be queued. Send retries it:
	// the device drops a second copy of a Governed Object.
	Unconfirmed Outcome = "unconfirmed"
	// Failed: an attempt got no answer at all (Result.Err says why).
	Failed Outcome = "error"
)

// Result is what Retry.Send did.
type Result struct {
	Agent    string   `json:"agent"`
	Object   string   `json:"objectId"`
	Outcome  Outcome  `json:"outcome"`
	Attempts []Answer `json:"attempts"`
	Err      string   `json:"error,omitempty"`
}

// OK reports whether the message was delivered or queued.
func (r Result) OK() bool { return r.Outcome == Delivered || r.Outcome == Queued }

// Retry sends one object and follows the offline profile's rules: 200 is
// delivered; 503 with queued true means the relay stored it for the
// sleeping agent, so it is never sent again (the next attempt would only
// queue a duplicate, which the agent's replay cache would refuse anyway);
// a refusal that queued nothing (Answer.Retryable) is tried again while
// Wait allows, at the relay's Retry-After when it gives one and otherwise
// with exponential backoff and jitter; 504 agent_unanswered is never
// tried again, since the agent may have processed it. Attempt is
// required.
type Retry struct {
	// Attempt sends obj once (Client.Attempt, Plaintext.Attempt).
	Attempt func(ctx context.Context, obj *governed.Object) (Answer, error)
	// Wait is how long to keep trying; zero means one attempt.
	Wait time.Duration
	// TimeScale is the relay's time scale (torpor-relay --time-scale):
	// its Retry-After counts seconds on its clock, which runs that many
	// times faster than Clock. Zero means 1.
	TimeScale float64
	// Clock is the clock Retry waits on; nil means clock.Real.
	Clock clock.Clock
	// Rand is the source of the backoff's jitter; nil means crypto/rand.
	Rand io.Reader
	// OnRetry, when set, is called before each wait with the answer that
	// is retried and the wait.
	OnRetry func(a Answer, delay time.Duration)
}

// Backoff bounds, when the relay gives no Retry-After.
const (
	firstBackoff = 2 * time.Second
	maxBackoff   = 5 * time.Minute
)

// Send sends obj until an answer is final, Wait is used up or ctx ends.
func (r *Retry) Send(ctx context.Context, obj *governed.Object) Result {
	clk := clock.Or(r.Clock)
	res := Result{Object: obj.ID}
	deadline := clk.Now().Add(r.Wait)
	backoff := firstBackoff
	for {
		ans, err := r.Attempt(ctx, obj)
		if err != nil {
			res.Outcome, res.Err = Failed, err.Error()
			return res
		}
		res.Attempts = append(res.Attempts, ans)
		if res.Outcome = outcome(ans); (res.Outcome != Refused && res.Outcome != Unconfirmed) || !ans.Retryable() {
			return res
		}
		delay := r.retryAfter(ans)
		if delay == 0 {
			delay = jitter(r.Rand, backoff)
			backoff = min(2*backoff, maxBackoff)
		}
		if clk.Now().Add(delay).After(deadline) {
			return res
		}
		if r.OnRetry != nil {
			r.OnRetry(ans, delay)
		}
		t := clk.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			res.Err = ctx.Err().Error()
			return res
		case <-t.C():
		}
	}
}

// outcome classifies one answer.
func outcome(a Answer) Outcome {
	switch {
	case a.Rejected():
		return Rejected
	case a.Status == http.StatusOK:
		return Delivered
	case a.Status == http.StatusServiceUnavailable && a.Queued:
		return Queued
	case a.Status == http.StatusGatewayTimeout:
		return Unanswered
	case a.Unconfirmed():
		return Unconfirmed
	}
	return Refused
}

// retryAfter is a's Retry-After on Clock, zero for none.
func (r *Retry) retryAfter(a Answer) time.Duration {
	scale := r.TimeScale
	if scale == 0 {
		scale = 1
	}
	return time.Duration(float64(a.RetryAfter) * float64(time.Second) / scale)
}

// jitter returns a duration drawn from [d/2, d] with rnd (nil:
// crypto/rand).
func jitter(rnd io.Reader, d time.Duration) time.Duration {
	if rnd == nil {
		rnd = rand.Reader
	}
	n, err := rand.Int(rnd, big.NewInt(int64(d/2)+1))
	if err != nil {
		return d
	}
	return d/2 + time.Duration(n.Int64())
}
