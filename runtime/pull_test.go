package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// pullCounter is a link that counts its pulls; it keeps the
// *link.Client's QueueEmpty.
type pullCounter struct {
	*link.Client
	pulls *atomic.Int32
}

func (l pullCounter) Pull(ctx context.Context, after uint64, max int) ([]wire.Record, bool, error) {
	l.pulls.Add(1)
	return l.Client.Pull(ctx, after, max)
}

// sayNothingLink is a link to a relay whose hello does not say whether
// its queue is empty (one that predates wire.Frame.Empty).
type sayNothingLink struct{ runtime.Link }

// TestAnEmptyQueueIsNotPulled: the relay's hello says that it queued
// nothing for the device, and an empty wake pulls nothing (one round trip
// less); a wake with a record queued while the device slept pulls and
// drains it; a relay that does not say gets a pull every wake.
func TestAnEmptyQueueIsNotPulled(t *testing.T) {
	for _, tt := range []struct {
		name       string
		says       bool
		emptyPulls int32
	}{
		{"relay says", true, 0},
		{"relay does not say", false, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, wake.HourlyWake)
			var pulls atomic.Int32
			w.cfg.Hooks.Dial = func(ctx context.Context, c link.Config) (runtime.Link, error) {
				l, err := link.Dial(ctx, c)
				if err != nil {
					return nil, err
				}
				if !tt.says {
					return sayNothingLink{pullCounter{l, &pulls}}, nil
				}
				return pullCounter{l, &pulls}, nil
			}
			w.newAgent()
			w.run()
			w.nextWake() // boot
			pulls.Store(0)
			if r := w.wakeThroughWindow(); r.Drain.Records != 0 || pulls.Load() != tt.emptyPulls {
				t.Errorf("empty wake: %d pulls, %d records; want %d pulls, none", pulls.Load(), r.Drain.Records, tt.emptyPulls)
			}
			alice := runtimetest.Key(t, 1)
			w.send(alice, runtimetest.Object(t, alice, "comms:message", w.clock.Now(), 24*time.Hour, nil))
			pulls.Store(0)
			if r := w.wakeThroughWindow(); r.Drain.Records != 1 || pulls.Load() == 0 {
				t.Errorf("wake after a record was queued: %d pulls, %d records; want the record pulled", pulls.Load(), r.Drain.Records)
			}
			w.shutdown()
		})
	}
}
