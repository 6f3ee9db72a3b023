package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/wake"
)

// slowCloseLink takes closeTime on the fake clock to close, as a close
// handshake over a slow radio would.
type slowCloseLink struct {
	runtime.Link
	clock     *clocktest.Clock
	closeTime time.Duration
	closed    *atomic.Bool
}

func (l slowCloseLink) Close() error {
	l.clock.Advance(l.closeTime)
	l.closed.Store(true)
	return l.Link.Close()
}

// armSource is a wake source that records whether the link was closed when
// the agent armed it.
type armSource struct {
	wake.Source
	closed *atomic.Bool
	armed  chan bool
}

func (s armSource) Wait(ctx context.Context, until time.Time) (wake.Wake, error) {
	s.armed <- s.closed.Load()
	return s.Source.Wait(ctx, until)
}

// TestClosePhaseMeasuresTheLinkClose: the last phase of a wake, "close",
// is the time the link took to close, measured on the agent's clock, and
// the wake source is armed only after it.
func TestClosePhaseMeasuresTheLinkClose(t *testing.T) {
	const closeTime = 3 * time.Second
	w := newWorld(t, wake.HourlyWake)
	var closed atomic.Bool
	w.cfg.Hooks.Dial = func(ctx context.Context, c link.Config) (runtime.Link, error) {
		l, err := link.Dial(ctx, c)
		if err != nil {
			return nil, err
		}
		closed.Store(false)
		return slowCloseLink{Link: l, clock: w.clock, closeTime: closeTime, closed: &closed}, nil
	}
	rtc := &suspendSource{w: w, asleep: make(chan struct{}, 1), wakeup: make(chan struct{})}
	src := armSource{Source: rtc, closed: &closed, armed: make(chan bool, 1)}
	w.cfg.Schedule.Sources = []wake.Source{src}
	w.newAgent()
	w.run()
	r := w.nextWake()
	last := r.Phases[len(r.Phases)-1]
	if last.Name != runtime.PhaseClose || last.Duration != closeTime || last.Start+last.Duration != r.Awake {
		t.Errorf("last phase %+v of a wake awake %v; want %s taking the link's %v, ending the wake", last, r.Awake, runtime.PhaseClose, closeTime)
	}
	if got := r.Phase(runtime.PhaseClose); got != closeTime {
		t.Errorf("Phase(%s) = %v, want %v", runtime.PhaseClose, got, closeTime)
	}
	if announce := r.Phase(runtime.PhaseAnnounce); announce >= closeTime {
		t.Errorf("announce took %v: the link's close counted in it", announce)
	}
	if closedFirst := <-src.armed; !closedFirst {
		t.Error("the wake source was armed before the link was closed")
	}
	<-rtc.asleep
	w.shutdown()
}
