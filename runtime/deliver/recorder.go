package deliver

import (
	"context"
	"sync"
)

// Recorder is a Handler that keeps what it is handed instead of handing it
// to an application. torpor-conformance runs the receive pipeline with
// one as the application, and tests use it to see what reached the
// application. The zero Recorder accepts every delivery; it is safe for
// concurrent use.
type Recorder struct {
	mu sync.Mutex
	// mu guards all following fields.
	got     []Delivery
	err     error
	hook    func(Delivery)
	discard bool
	answer  func(Delivery) Outcome
}

// Deliver implements Handler: it runs the hook, then records d and
// returns the answer, or returns the error set by FailWith.
func (r *Recorder) Deliver(_ context.Context, d Delivery) (Outcome, error) {
	r.mu.Lock()
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		hook(d) // outside the lock: a hook may block or end its goroutine
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return Outcome{}, r.err
	}
	if !r.discard {
		r.got = append(r.got, d)
	}
	if r.answer != nil {
		return r.answer(d), nil
	}
	return Outcome{OK: true}, nil
}

// FailWith makes later deliveries fail with err (none when err is nil).
func (r *Recorder) FailWith(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

// OnDeliver runs hook on each later delivery before it is recorded (none
// when hook is nil).
func (r *Recorder) OnDeliver(hook func(Delivery)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hook = hook
}

// Discard makes the recorder accept later deliveries without keeping them.
func (r *Recorder) Discard() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.discard = true
}

// AnswerWith makes later successful deliveries return answer(d) instead of
// Outcome{OK: true}.
func (r *Recorder) AnswerWith(answer func(Delivery) Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answer = answer
}

// Got returns the deliveries recorded so far, in order.
func (r *Recorder) Got() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.got...)
}

// IDs returns the object IDs of the deliveries recorded so far, in order.
func (r *Recorder) IDs() []string {
	return r.field(func(d Delivery) string { return d.ObjectID })
}

// Purposes returns the purposes of the deliveries recorded so far, in
// order.
func (r *Recorder) Purposes() []string {
	return r.field(func(d Delivery) string { return d.Purpose })
}

func (r *Recorder) field(f func(Delivery) string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, d := range r.got {
		out = append(out, f(d))
	}
	return out
}
