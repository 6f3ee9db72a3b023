package runtime_test

import (
	"context"
	"log/slog"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/wake"
)

// killedHandOff leaves w's agent.db as a process killed during the hand-off
// of obj (record seq 7) leaves it: the batch committed and acknowledged,
// the handler entered and never returned. Then, when recover is set, a
// second process runs the next wake's recovery and is killed before it
// reports anything.
// It returns the delivery the killed handler was given.
func (w *world) killedHandOff(obj []byte, recover bool) (cut deliver.Delivery) {
	w.t.Helper()
	alice := runtimetest.Key(w.t, 1)
	rec := drain.Record{Seq: 7, From: alice.DID().String(), Body: runtimetest.Body(w.t, runtimetest.DataPart(w.t, obj))}
	w.rec.OnDeliver(func(d deliver.Delivery) { cut = d; goruntime.Goexit() })
	w.withPipeline(func(p *runtime.Pipeline) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.Batch(context.Background(), []drain.Record{rec}, nil)
		}()
		<-done
	})
	w.rec.OnDeliver(nil)
	if recover {
		w.withPipeline(func(p *runtime.Pipeline) {
			if r, err := p.Recover(context.Background()); err != nil || r.Lost != 1 {
				w.t.Fatalf("the killed wake's recovery = %+v, %v; want 1 lost", r, err)
			}
		})
	}
	return cut
}

// withPipeline runs fn on a pipeline over w's agent.db, then closes the
// file as a killed process leaves it (bbolt's commits are all there is).
func (w *world) withPipeline(fn func(*runtime.Pipeline)) {
	w.t.Helper()
	db, err := store.Open(w.cfg.DataDir+"/"+runtime.DBFile, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	p, err := runtime.OpenPipeline(db, w.cfg.PipelineConfig)
	if err != nil {
		w.t.Fatal(err)
	}
	fn(p)
	p.Close()
	if err := db.Close(); err != nil {
		w.t.Fatal(err)
	}
}

// TestLostHandOffIsReportedAfterAKilledWake: with at-most-once notify, a
// hand-off a kill cut off is reported by the next wake that runs to its
// end, even when the wake that found it was killed too: a warning naming
// the object, and the signed status the relay keeps (lostCount, lost).
// It is logged once, and stays in the status.
func TestLostHandOffIsReportedAfterAKilledWake(t *testing.T) {
	var log runtimetest.Log
	w := newWorld(t, wake.HourlyWake)
	w.cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	alice := runtimetest.Key(t, 1)
	obj := runtimetest.Object(t, alice, "comms:message", t0, 2*time.Hour, nil)
	w.killedHandOff(obj, true)
	rtc := &suspendSource{w: w, asleep: make(chan struct{}, 1), wakeup: make(chan struct{})}
	w.cfg.Sources = []wake.Source{rtc}
	w.newAgent()
	w.run()
	w.nextWake() // boot
	id := objID(t, obj)
	if n := strings.Count(log.String(), `msg="hand-off possibly lost"`); n != 1 || !strings.Contains(log.String(), "objectId="+id) {
		t.Fatalf("the boot wake logged %d lost hand-offs; want 1 naming %s:\n%s", n, id, log.String())
	}
	st := w.status()
	if st.LostCount != 1 || len(st.Lost) != 1 || st.Lost[0].ObjectID != id || st.Lost[0].Seq != 7 ||
		st.Lost[0].Issuer != alice.DID().String() || st.Lost[0].Purpose != "comms:message" {
		t.Fatalf("status after the boot wake: lost %d %+v; want the object %s", st.LostCount, st.Lost, id)
	}
	if len(w.rec.IDs()) != 0 {
		t.Fatalf("the handler got %v; at-most-once never hands over again", w.rec.IDs())
	}
	<-rtc.asleep
	rtc.wakeup <- struct{}{}
	w.waitPhases(runtime.PhasePublish)
	if n := strings.Count(log.String(), `msg="hand-off possibly lost"`); n != 1 {
		t.Errorf("the second wake logged the lost hand-off again (%d lines)", n)
	}
	if st := w.status(); st.LostCount != 1 || len(st.Lost) != 1 {
		t.Errorf("status after the second wake: lost %d %+v; want it still listed", st.LostCount, st.Lost)
	}
	w.shutdown()
}

// TestKilledHandOffAtLeastOnceIsRepeated: with at-least-once notify the
// same kill is followed by the hand-off repeated, with the idempotency key
// handlers deduplicate on (issuer, object id; docs/agent.md), and nothing
// reported lost.
func TestKilledHandOffAtLeastOnceIsRepeated(t *testing.T) {
	var log runtimetest.Log
	w := newWorld(t, wake.HourlyWake)
	w.cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	w.cfg.Notify = drain.AtLeastOnce
	alice := runtimetest.Key(t, 1)
	obj := runtimetest.Object(t, alice, "comms:message", t0, 2*time.Hour, nil)
	cut := w.killedHandOff(obj, false)
	w.newAgent()
	w.run()
	w.nextWake() // boot
	got := w.rec.Got()
	if len(got) != 1 || got[0].ObjectID != objID(t, obj) || got[0].ObjectID != cut.ObjectID ||
		got[0].Issuer != alice.DID().String() || got[0].Issuer != cut.Issuer || got[0].Attempt != 2 || cut.Attempt != 1 {
		t.Fatalf("after the kill the handler got %+v; want the object of the cut hand-off %+v again, attempt 2", got, cut)
	}
	if strings.Contains(log.String(), `msg="hand-off possibly lost"`) {
		t.Errorf("at-least-once reported a lost hand-off:\n%s", log.String())
	}
	if st := w.status(); st.LostCount != 0 || len(st.Lost) != 0 {
		t.Errorf("status: lost %d %+v; want none", st.LostCount, st.Lost)
	}
	w.shutdown()
}
