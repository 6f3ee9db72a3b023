//go:build integration

package mqtt

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/worldtest"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
	mq "github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/waketest"
)

// agentHour is the hour the tests start in; each world starts at a
// moment of it outside its (random) agent's window.
var agentHour = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// world is a real relay, a real agent with operator commands, and a
// broker, on one fake clock (the broker keeps real time), plus an
// operator and a sender.
type world struct {
	t       *testing.T
	clock   *clocktest.Clock
	key     *did.PrivateKey
	opKey   *did.PrivateKey
	sender  *did.PrivateKey
	srv     *httptest.Server
	broker  mqtttest.Broker
	agent   *runtime.Agent
	cmds    *manage.Commands
	op      *command.Operator
	witness *mqtttest.Witness
	window  wake.Window
	start   time.Time
	sink    *deliver.Recorder
	wakes   chan runtime.WakeReport
	phases  chan runtime.Phase
	seq     uint64
	done    chan error
}

// newSink returns the application: it records what the agent hands it and
// answers with a receipt naming an effect.
func newSink() *deliver.Recorder {
	r := &deliver.Recorder{}
	r.AnswerWith(func(deliver.Delivery) deliver.Outcome {
		return deliver.Outcome{OK: true, Receipt: []byte(`{"effectId":"fx-1"}`)}
	})
	return r
}

// agentConfig is the configuration of w's agent, with its data under dir:
// its hooks hand w each wake report and phase, dropping the phases of a
// wake once it is reported.
func (w *world) agentConfig(dir string, mode wake.Mode) runtime.Config {
	return runtime.Config{
		PipelineConfig: runtime.PipelineConfig{Key: w.key, Owner: w.opKey.DID(), Purposes: purpose.Set{"comms:*", "action:*"},
			Consequential: purpose.Set{"action:*"}, AllowPlaintext: true,
			Routes: []deliver.Route{{Pattern: "*", Name: "sink", Handler: w.sink}}, Clock: w.clock},
		Hooks: runtime.Hooks{
			OnWake: func(r runtime.WakeReport) {
				for len(w.phases) > 0 {
					<-w.phases
				}
				w.wakes <- r
			},
			OnPhase: func(p runtime.Phase) {
				select {
				case w.phases <- p:
				default:
				}
			},
			Kernel: waketest.NewKernelClock(time.Hour),
			Rand:   bytes.NewReader(make([]byte, 1<<16)),
		},
		Store: runtime.Store{DataDir: filepath.Join(dir, "agent")},
		Relay: runtime.Relay{URL: w.srv.URL},
		Schedule: runtime.Schedule{
			Mode:         mode,
			WindowLength: w.window.Length,
		},
		Logger: testLogger(w.t),
	}
}

func newWorld(t *testing.T, b mqtttest.Broker, mode wake.Mode) *world {
	w := &world{t: t, broker: b, key: mustKey(t), opKey: mustKey(t), sender: mustKey(t),
		sink: newSink(), wakes: make(chan runtime.WakeReport, 16), phases: make(chan runtime.Phase, 1024)}
	w.window = wake.SpreadWindowFor(w.key.DID().String())
	w.window.Length = 5 * time.Minute
	// Half an hour after the window opens: outside it, so the agent boots
	// asleep.
	winStart, _ := w.window.Next(agentHour)
	w.start = winStart.Add(30 * time.Minute)
	w.clock = clocktest.New(w.start)
	dir := t.TempDir()
	rl, err := worldtest.Open(dir, relay.Config{Clock: w.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rl.Close)
	w.srv = rl.Server
	cfg := w.agentConfig(dir, mode)
	if w.agent, err = runtime.New(cfg); err != nil {
		t.Fatal(err)
	}
	if w.cmds, err = manage.NewCommands(w.agent, manage.CommandsConfig{Broker: b.URL(), Name: name,
		Operators: []did.DID{w.opKey.DID()}, Logger: testLogger(t)}); err != nil {
		t.Fatal(err)
	}
	w.agent.SetManagement(w.cmds)
	if e, ok := b.(*mqtttest.Embedded); ok {
		e.AddOperator(w.opKey.DID())
	}
	if w.op, err = command.DialOperator(ctxT(t), command.OperatorConfig{Broker: b.URL(), Key: w.opKey, Clock: w.clock}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.op.Close(context.Background()) })
	if err := w.op.Watch(ctxT(t), name); err != nil {
		t.Fatal(err)
	}
	w.witness = mqtttest.NewWitness(t, b, mq.Topics{Device: name}.Command())
	ctx, cancel := context.WithCancel(context.Background())
	w.done = make(chan error, 1)
	go func() { w.done <- w.agent.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-w.done
		w.cmds.Close(context.Background())
	})
	return w
}

func (w *world) nextWake() runtime.WakeReport {
	w.t.Helper()
	select {
	case r := <-w.wakes:
		return r
	case err := <-w.done:
		w.t.Fatalf("Run ended: %v", err)
	case <-ctxT(w.t).Done():
		w.t.Fatal("no wake")
	}
	return runtime.WakeReport{}
}

func (w *world) waitPhase(name string) {
	w.t.Helper()
	ctx := ctxT(w.t)
	for {
		select {
		case p := <-w.phases:
			if p.Name == name {
				return
			}
		case <-ctx.Done():
			w.t.Fatalf("phase %s never completed", name)
		}
	}
}

func (w *world) status(ok func(envelope.Status) bool) envelope.Status {
	w.t.Helper()
	ctx := ctxT(w.t)
	for {
		st, _, err := w.op.Status(ctx, name, w.key.DID())
		if err != nil {
			w.t.Fatalf("status: %v", err)
		}
		if ok(st) {
			return st
		}
	}
}

func (w *world) send(op string, args any) string {
	w.t.Helper()
	w.seq = command.NextSeq(w.seq, w.clock.Now())
	s, err := w.op.Send(ctxT(w.t), name, command.Spec{Device: w.key.DID(), Seq: w.seq, Op: op, Args: args}, false)
	if err != nil {
		w.t.Fatal(err)
	}
	if s.NoSubscribers {
		w.t.Fatal("no broker session for the device")
	}
	w.witness.Await(w.t, s.Object.ID)
	return s.Object.ID
}

func (w *world) reply(id string) command.Reply {
	w.t.Helper()
	r, _, err := w.op.AwaitReply(ctxT(w.t), name, id, w.key.DID())
	if err != nil {
		w.t.Fatalf("reply to %s: %v", id, err)
	}
	return r
}

// post sends an object to the agent through the relay, as a sender, and
// returns the HTTP status and Retry-After.
func (w *world) post(purpose string, payload any) (int, int) {
	w.t.Helper()
	obj := runtimetest.Object(w.t, w.sender, purpose, w.clock.Now(), time.Hour, payload)
	body := runtimetest.Body(w.t, runtimetest.DataPart(w.t, obj))
	req, _ := http.NewRequest("POST", w.srv.URL+"/a/"+w.key.DID().String()+"/a2a/jsonrpc", bytes.NewReader(body))
	tok, err := bearer.Issue(w.sender, "http://"+w.srv.Listener.Addr().String(), w.clock.Now(), 0)
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set(a2a.VersionHeader, "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	return resp.StatusCode, ra
}

// TestSetModeChangesWhatTheRelayTellsSenders: relay, agent and broker
// together. A sleeping hourly_wake agent makes the relay answer 503 with a
// Retry-After into its window; an operator's set-mode always_on, sent
// while it sleeps, runs when the window opens, and from then on the relay
// delivers live (200). Then set-mode sleep with a scheduled wake: the
// relay queues again, with a Retry-After into the scheduled wake.
func TestSetModeChangesWhatTheRelayTellsSenders(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		w := newWorld(t, b, wake.HourlyWake)
		w.nextWake() // the boot wake, outside the window
		start, end := w.window.Next(w.start)
		w.status(func(s envelope.Status) bool { return s.State == envelope.StateAsleep })
		code, ra := w.post("comms:message", nil)
		at := w.clock.Now().Add(time.Duration(ra) * time.Second)
		if code != http.StatusServiceUnavailable || at.Before(start) || !at.Before(end) {
			t.Fatalf("while asleep: %d, Retry-After %ds; want 503 into [%v, %v)", code, ra, start, end)
		}
		id := w.send(command.OpSetMode, &command.SetModeArgs{Mode: "always_on"})
		w.clock.Set(start)
		if r := w.reply(id); r.Outcome != command.OutcomeOK {
			t.Fatalf("set-mode always_on: %+v", r)
		}
		w.nextWake() // the window's wake ends on the mode change
		w.waitPhase(runtime.PhasePublish)
		if code, _ := w.post("comms:message", nil); code != http.StatusOK {
			t.Fatalf("after set-mode always_on: %d, want 200", code)
		}

		wakeAt := w.clock.Now().Add(2 * time.Hour).Truncate(time.Second)
		id = w.send(command.OpSetMode, &command.SetModeArgs{Mode: "sleep", WakeAt: &wakeAt})
		if r := w.reply(id); r.Outcome != command.OutcomeOK {
			t.Fatalf("set-mode sleep: %+v", r)
		}
		w.nextWake() // the always_on wake ends; the agent announces sleep
		st := w.status(func(s envelope.Status) bool { return s.State == envelope.StateAsleep })
		if st.Mode != "sleep" || st.NextWake == nil || !st.NextWake.Equal(wakeAt) {
			t.Errorf("status after set-mode sleep = %+v", st)
		}
		// A sleeping agent's relay queues, with a Retry-After into the
		// scheduled wake (the agent announces the mode in force when a
		// mode change ends its wake).
		code, ra = w.post("comms:message", nil)
		at = w.clock.Now().Add(time.Duration(ra) * time.Second)
		if code != http.StatusServiceUnavailable || at.Before(wakeAt) || !at.Before(wakeAt.Add(wake.DefaultLength)) {
			t.Fatalf("after set-mode sleep: %d, Retry-After %ds; want 503 with a Retry-After into the scheduled wake at %v", code, ra, wakeAt)
		}
		if got := w.sink.Purposes(); len(got) != 2 {
			t.Errorf("delivered %v, want the two messages sent while live or queued before", got)
		}
	})
}

// TestHeldActionConfirmedOverMQTT: a consequential action reaches the
// agent and is held for the owner; the operator (the owner) sees it in the
// status and confirms it over MQTT; it runs once.
func TestHeldActionConfirmedOverMQTT(t *testing.T) {
	forEachBroker(t, func(t *testing.T, b mqtttest.Broker) {
		w := newWorld(t, b, wake.AlwaysOn)
		w.status(func(s envelope.Status) bool { return s.State == envelope.StateAwake })
		w.waitPhase(runtime.PhasePublish)
		if code, _ := w.post("action:open-valve", map[string]any{"idempotencyKey": "valve-7"}); code != http.StatusOK {
			t.Fatalf("posting the action: %d", code)
		}
		r := w.reply(w.send(command.OpStatus, nil))
		var rep struct {
			Holds []struct{ Key, Purpose string }
		}
		if err := json.Unmarshal(r.Result, &rep); err != nil || len(rep.Holds) != 1 || rep.Holds[0].Purpose != "action:open-valve" {
			t.Fatalf("status shows holds %s, %v", r.Result, err)
		}
		if got := w.sink.Purposes(); len(got) != 0 {
			t.Fatalf("the action ran before it was confirmed: %v", got)
		}
		c := w.reply(w.send(command.OpConfirm, &command.HoldArgs{Hold: rep.Holds[0].Key}))
		if c.Outcome != command.OutcomeOK {
			t.Fatalf("confirm: %+v", c)
		}
		if got := w.sink.Purposes(); len(got) != 1 || got[0] != "action:open-valve" {
			t.Errorf("delivered %v, want the action once", got)
		}
		// Confirming again finds nothing held: the action cannot run twice.
		if again := w.reply(w.send(command.OpConfirm, &command.HoldArgs{Hold: rep.Holds[0].Key})); again.Outcome != command.OutcomeFailed || again.Reason != "no-hold" {
			t.Errorf("second confirm: %+v", again)
		}
	})
}
