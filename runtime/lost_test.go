package runtime_test

import (
	"context"
	"log/slog"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/wake"
)

// killHandOff leaves the agent.db in dataDir as a process killed during
// the hand-off of obj (record seq 7, from runtimetest.Key 1) leaves it: the
// batch committed and acknowledged, the handler entered and never
// returned. Then, when recover is set, a second process runs the next
// wake's recovery and is killed before it reports anything. It returns the
// delivery the killed handler was given.
func killHandOff(t testing.TB, dataDir string, pc runtime.PipelineConfig, obj []byte, recover bool) (cut deliver.Delivery) {
	t.Helper()
	alice := runtimetest.Key(t, 1)
	rec := drain.Record{Seq: 7, From: alice.DID().String(), Body: runtimetest.Body(t, runtimetest.DataPart(t, obj))}
	pc.Routes = []deliver.Route{{Pattern: "*", Name: "killed", Handler: deliver.HandlerFunc(
		func(_ context.Context, d deliver.Delivery) (deliver.Outcome, error) {
			cut = d
			goruntime.Goexit()
			return deliver.Outcome{}, nil
		})}}
	withPipeline(t, dataDir, pc, func(p *runtime.Pipeline) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.Batch(context.Background(), []drain.Record{rec}, nil)
		}()
		<-done
	})
	if recover {
		withPipeline(t, dataDir, pc, func(p *runtime.Pipeline) {
			if r, err := p.Recover(context.Background()); err != nil || r.Lost != 1 {
				t.Fatalf("the killed wake's recovery = %+v, %v; want 1 lost", r, err)
			}
		})
	}
	return cut
}

// withPipeline runs fn on a pipeline over the agent.db in dataDir, then
// closes the file as a killed process leaves it (bbolt's commits are all
// there is).
func withPipeline(t testing.TB, dataDir string, pc runtime.PipelineConfig, fn func(*runtime.Pipeline)) {
	t.Helper()
	db, err := store.Open(filepath.Join(dataDir, runtime.DBFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := runtime.OpenPipeline(db, pc)
	if err != nil {
		t.Fatal(err)
	}
	fn(p)
	p.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
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
	killHandOff(t, w.cfg.Store.DataDir, w.cfg.PipelineConfig, obj, true)
	rtc := &suspendSource{w: w, asleep: make(chan struct{}, 1), wakeup: make(chan struct{})}
	w.cfg.Schedule.Sources = []wake.Source{rtc}
	w.newAgent()
	w.run()
	w.nextWake() // boot
	id := runtimetest.ObjectID(t, obj)
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
	cut := killHandOff(t, w.cfg.Store.DataDir, w.cfg.PipelineConfig, obj, false)
	w.newAgent()
	w.run()
	w.nextWake() // boot
	got := w.rec.Got()
	if len(got) != 1 || got[0].ObjectID != runtimetest.ObjectID(t, obj) || got[0].ObjectID != cut.ObjectID ||
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

// TestLostHandOffInTheMQTTStatus: the retained MQTT status counts and
// lists the possibly lost hand-offs, and so does the status command's
// answer, which torporctl device lost prints.
func TestLostHandOffInTheMQTTStatus(t *testing.T) {
	obj := runtimetest.Object(t, runtimetest.Key(t, 1), "comms:message", cmdStart, 2*time.Hour, nil)
	w := newCmdWorldWith(t, wake.AlwaysOn, func(w *cmdWorld, cfg *runtime.Config, _ *manage.CommandsConfig) {
		killHandOff(t, cfg.Store.DataDir, cfg.PipelineConfig, obj, false)
	})
	w.Run()
	w.AwaitStatus(func(s envelope.Status) bool {
		return s.State == envelope.StateAwake && s.Lost == 1 && len(s.LostHandOffs) == 1 && s.LostHandOffs[0].ObjectID == runtimetest.ObjectID(t, obj)
	})
	if st := w.statusResult().Status; st.Lost != 1 || len(st.LostHandOffs) != 1 || st.LostHandOffs[0].Seq != 7 {
		t.Fatalf("the status command's status: lost %d %+v; want the object at seq 7", st.Lost, st.LostHandOffs)
	}
}
