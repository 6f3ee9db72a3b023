package runtime_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// publishLog records, for each state frame an agent publishes, whether
// its context had ended when it went out and what Publish returned, and
// whether the link was closed before that Publish returned.
type publishLog struct {
	mu     sync.Mutex
	sent   []publishCall
	closed bool
}

type publishCall struct {
	ctxErr, err     error
	closedMeanwhile bool
}

// loggedLink is a link whose state frames go to a publishLog.
type loggedLink struct {
	runtime.Link
	log *publishLog
}

func (l loggedLink) Publish(ctx context.Context, st wire.State) (wire.Accepted, error) {
	ctxErr := ctx.Err()
	ok, err := l.Link.Publish(ctx, st)
	l.log.mu.Lock()
	l.log.sent = append(l.log.sent, publishCall{ctxErr: ctxErr, err: err, closedMeanwhile: l.log.closed})
	l.log.mu.Unlock()
	return ok, err
}

func (l loggedLink) Close() error {
	l.log.mu.Lock()
	l.log.closed = true
	l.log.mu.Unlock()
	return l.Link.Close()
}

// Traffic passes on the client's count (runtime reads it from a Link
// that has it).
func (l loggedLink) Traffic() link.Traffic { return l.Link.(*link.Client).Traffic() }

// TestAStoppedAgentAnnouncesItsLastStateAndWaits: an agent stopped while
// awake (SIGTERM cancels Run's context) still publishes its last state
// (its next wake) on a context of its own, and closes its link only once
// the relay answered: when Run returns, the relay holds that state.
// Before, the last state went out on the cancelled context: it never
// reached the relay, which kept the state of the wake's first publish.
func TestAStoppedAgentAnnouncesItsLastStateAndWaits(t *testing.T) {
	w := newWorld(t, wake.AlwaysOn)
	log := &publishLog{}
	w.cfg.Hooks.Dial = func(ctx context.Context, c link.Config) (runtime.Link, error) {
		l, err := link.Dial(ctx, c)
		if err != nil {
			return nil, err
		}
		return loggedLink{Link: l, log: log}, nil
	}
	w.newAgent()
	w.run()
	w.waitPhase(runtime.PhasePublish)
	first, err := w.states.Get(context.Background(), w.key.DID().String())
	if err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(time.Minute) // the last state is told by when the relay stored it
	w.shutdown()

	st, err := w.states.Get(context.Background(), w.key.DID().String())
	if err != nil {
		t.Fatal(err)
	}
	if want := first.UpdatedAt.Add(time.Minute); !st.UpdatedAt.Equal(want) {
		t.Errorf("once Run returned, the relay's state was updated at %v; want the stopping agent's last state, stored at %v", st.UpdatedAt, want)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.sent) < 2 {
		t.Fatalf("%d states published; want the wake's and the last one", len(log.sent))
	}
	last := log.sent[len(log.sent)-1]
	if last.ctxErr != nil || last.err != nil || last.closedMeanwhile {
		t.Errorf("the last state: published on a context ended with %v, answered %v, link closed before the answer %v; want a live context, the relay's answer, then the close", last.ctxErr, last.err, last.closedMeanwhile)
	}
	if !log.closed {
		t.Error("the link was not closed")
	}
}
