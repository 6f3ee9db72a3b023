package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
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
	"github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/waketest"
)

// cmdStart is outside the test agent's hourly window.
var cmdStart = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

// cmdWorld is an agent with operator commands, its relay and the embedded
// MQTT broker, all on one fake clock, and an operator.
type cmdWorld struct {
	t       *testing.T
	clock   *clocktest.Clock
	key     *did.PrivateKey
	opKey   *did.PrivateKey
	srv     *httptest.Server
	broker  *mqtttest.Embedded
	agent   *runtime.Agent
	cmds    *manage.Commands
	op      *command.Operator
	witness *mqtttest.Witness
	window  wake.Window
	wakes   chan runtime.WakeReport
	phases  chan runtime.Phase
	seq     uint64
	stop    context.CancelFunc
	done    chan error
}

func newCmdWorld(t *testing.T, mode wake.Mode) *cmdWorld { return newCmdWorldWith(t, mode, nil) }

// startRelay starts the relay the agent talks to, its stores in dir.
func (w *cmdWorld) startRelay(dir string) {
	rl, err := worldtest.Open(dir, relay.Config{Clock: w.clock})
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(rl.Close)
	w.srv = rl.Server
}

// config is the agent's configuration: its hooks feed w.wakes and
// w.phases.
func (w *cmdWorld) config(dir string, mode wake.Mode) runtime.Config {
	return runtime.Config{
		PipelineConfig: runtime.PipelineConfig{Key: w.key, Purposes: purpose.Set{"comms:*", "action:*"},
			Consequential: purpose.Set{"action:*"}, AllowPlaintext: true,
			Routes: []deliver.Route{{Pattern: "*", Name: "sink", Handler: cmdSink{}}}, Clock: w.clock},
		Hooks: runtime.Hooks{
			OnWake: func(r runtime.WakeReport) {
				// Every phase of this wake was reported before: forget
				// them, so waitPhase sees only the next wake's.
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
	}
}

// newCmdWorldWith is newCmdWorld with opt changing the configurations
// before the agent and its commands are made.
func newCmdWorldWith(t *testing.T, mode wake.Mode, opt func(w *cmdWorld, cfg *runtime.Config, cc *manage.CommandsConfig)) *cmdWorld {
	w := &cmdWorld{t: t, clock: clocktest.New(cmdStart), key: runtimetest.Key(t, 9), opKey: runtimetest.Key(t, 10),
		wakes: make(chan runtime.WakeReport, 16), phases: make(chan runtime.Phase, 1024)}
	dir := t.TempDir()
	w.startRelay(dir)
	w.broker = mqtttest.StartEmbedded(t, nil)
	w.broker.AddOperator(w.opKey.DID())
	w.window = wake.SpreadWindowFor(w.key.DID().String())
	w.window.Length = 5 * time.Minute
	cfg := w.config(dir, mode)
	cc := manage.CommandsConfig{
		Broker: w.broker.URL(), Name: "pi-7", Operators: []did.DID{w.opKey.DID()},
		Logger: slog.New(slog.NewTextHandler(cmdLog{t}, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	if opt != nil {
		opt(w, &cfg, &cc)
	}
	var err error
	if w.agent, err = runtime.New(cfg); err != nil {
		t.Fatal(err)
	}
	w.cmds, err = manage.NewCommands(w.agent, cc)
	if err != nil {
		t.Fatal(err)
	}
	w.agent.SetManagement(w.cmds)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	if w.op, err = command.DialOperator(ctx, command.OperatorConfig{Broker: w.broker.URL(), Key: w.opKey, Clock: w.clock}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.op.Close(context.Background()) })
	if err := w.op.Watch(ctx, "pi-7"); err != nil {
		t.Fatal(err)
	}
	w.witness = mqtttest.NewWitness(t, w.broker, mqtt.Topics{Device: "pi-7"}.Command())
	return w
}

// cmdSink takes every delivery.
type cmdSink struct{}

func (cmdSink) Deliver(context.Context, deliver.Delivery) (deliver.Outcome, error) {
	return deliver.Outcome{OK: true}, nil
}

type cmdLog struct{ t *testing.T }

func (l cmdLog) Write(p []byte) (int, error) { l.t.Log(string(p)); return len(p), nil }

func (w *cmdWorld) run() {
	ctx, cancel := context.WithCancel(context.Background())
	w.stop, w.done = cancel, make(chan error, 1)
	go func() { w.done <- w.agent.Run(ctx) }()
	w.t.Cleanup(func() {
		cancel()
		<-w.done
		w.cmds.Close(context.Background())
	})
}

func (w *cmdWorld) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	w.t.Cleanup(cancel)
	return ctx
}

func (w *cmdWorld) nextWake() runtime.WakeReport {
	w.t.Helper()
	select {
	case r := <-w.wakes:
		return r
	case err := <-w.done:
		w.t.Fatalf("Run ended: %v", err)
	case <-w.ctx().Done():
		w.t.Fatal("no wake")
	}
	return runtime.WakeReport{}
}

// waitPhase waits until a phase named name completes.
func (w *cmdWorld) waitPhase(name string) {
	w.t.Helper()
	ctx := w.ctx()
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

// command sends a command and returns the device's reply.
func (w *cmdWorld) command(op string, args any) command.Reply {
	w.t.Helper()
	return w.reply(w.send(op, args))
}

func (w *cmdWorld) send(op string, args any) string {
	w.t.Helper()
	w.seq = command.NextSeq(w.seq, w.clock.Now())
	s, err := w.op.Send(w.ctx(), "pi-7", command.Spec{Device: w.key.DID(), Seq: w.seq, Op: op, Args: args}, false)
	if err != nil {
		w.t.Fatal(err)
	}
	if s.NoSubscribers {
		w.t.Fatal("no broker session for the device")
	}
	w.witness.Await(w.t, s.Object.ID)
	return s.Object.ID
}

// awaitStatus waits until the device's status satisfies ok (statuses
// arrive as the device publishes them).
func (w *cmdWorld) awaitStatus(ok func(envelope.Status) bool) envelope.Status {
	w.t.Helper()
	ctx := w.ctx()
	for {
		st, _, err := w.op.Status(ctx, "pi-7", w.key.DID())
		if err != nil {
			w.t.Fatalf("status: %v", err)
		}
		if ok(st) {
			return st
		}
	}
}

func (w *cmdWorld) reply(id string) command.Reply {
	w.t.Helper()
	r, _, err := w.op.AwaitReply(w.ctx(), "pi-7", id, w.key.DID())
	if err != nil {
		w.t.Fatalf("reply to %s: %v", id, err)
	}
	return r
}

// post sends a message to the agent through the relay, as a sender would,
// and returns the status and Retry-After.
func (w *cmdWorld) post(sender *did.PrivateKey) (int, int) {
	w.t.Helper()
	obj := runtimetest.Object(w.t, sender, "comms:message", w.clock.Now(), time.Hour, nil)
	return postA2A(w.t, w.srv, w.key.DID(), sender, w.clock.Now(), runtimetest.Body(w.t, runtimetest.DataPart(w.t, obj)))
}

// TestSetModeOverMQTTChangesWhatTheRelayTellsSenders: a set-mode sent
// while the agent sleeps waits in the broker, runs at the next window, and
// from then on the relay answers senders live instead of 503.
func TestSetModeOverMQTTChangesWhatTheRelayTellsSenders(t *testing.T) {
	w := newCmdWorld(t, wake.HourlyWake)
	w.run()
	boot := w.nextWake()
	start, _ := w.window.Next(cmdStart)
	st := w.awaitStatus(func(s envelope.Status) bool { return s.State == envelope.StateAsleep })
	if st.Mode != "hourly_wake" || st.NextWake == nil || !st.NextWake.Equal(start) || !boot.NextWake.Equal(start) {
		t.Fatalf("status after the boot wake = %+v, want asleep until %v", st, start)
	}
	sender := runtimetest.Key(t, 11)
	if code, ra := w.post(sender); code != http.StatusServiceUnavailable || ra == 0 {
		t.Fatalf("sender while asleep: %d Retry-After %d, want 503 with a Retry-After", code, ra)
	}

	id := w.send(command.OpSetMode, &command.SetModeArgs{Mode: "always_on"})
	w.clock.Set(start) // the window opens: the agent wakes and takes the command
	if r := w.reply(id); r.Outcome != command.OutcomeOK {
		t.Fatalf("set-mode reply = %+v", r)
	}
	// The window's wake ends on the mode change; the agent wakes again in
	// always_on and publishes it.
	w.nextWake()
	w.waitPhase(runtime.PhasePublish)
	if code, _ := w.post(sender); code != http.StatusOK {
		t.Fatalf("sender after set-mode always_on: %d, want 200 (live)", code)
	}
	if m, _ := w.agent.Mode(); m != wake.AlwaysOn {
		t.Errorf("agent mode = %s", m)
	}
}

// TestOperatorCommandsOnTheAgent runs halt, resume, status, config and
// reconcile through MQTT on a live agent.
func TestOperatorCommandsOnTheAgent(t *testing.T) {
	w := newCmdWorld(t, wake.AlwaysOn)
	w.run()
	w.awaitStatus(func(s envelope.Status) bool { return s.State == envelope.StateAwake })

	halt := w.command(command.OpHalt, &command.NoteArgs{Note: "maintenance"})
	if halt.Outcome != command.OutcomeOK {
		t.Fatalf("halt: %+v", halt)
	}
	w.awaitStatus(func(s envelope.Status) bool { return s.Halted })
	r := w.command(command.OpStatus, nil)
	var rep struct {
		Status envelope.Status
		Halt   struct {
			Halted bool
			Note   string
		}
		Ledger map[string]int
	}
	if err := json.Unmarshal(r.Result, &rep); err != nil || !rep.Halt.Halted || rep.Status.Mode != "always_on" {
		t.Fatalf("status result %s: %v", r.Result, err)
	}
	// The halt records who halted, as torpor-agent halt records the local
	// user (cmd/torpor-agent/testdata/script/operator.txt).
	if want := "maintenance — " + w.opKey.DID().String() + " (MQTT command " + halt.Command + ")"; rep.Halt.Note != want {
		t.Errorf("halt note %q, want %q", rep.Halt.Note, want)
	}
	if r := w.command(command.OpResume, &command.NoteArgs{}); r.Outcome != command.OutcomeOK || string(r.Result) != `{"halted":false,"ran":0}` {
		t.Fatalf("resume: %+v", r)
	}
	tests := []struct {
		op      string
		args    any
		outcome command.Outcome
		reason  string
		result  string
	}{
		{command.OpConfigGet, &command.ConfigArgs{Key: "mode"}, command.OutcomeOK, "", `{"key":"mode","value":"always_on"}`},
		{command.OpConfigSet, &command.ConfigArgs{Key: "owner", Value: ptrTo("did:key:x")}, command.OutcomeFailed, "read-only", ""},
		{command.OpConfigGet, &command.ConfigArgs{Key: "colour"}, command.OutcomeFailed, "unknown-key", ""},
		{command.OpReconcile, &command.ReconcileArgs{Key: "nobody k1", Happened: true}, command.OutcomeFailed, "no-key", ""},
		{command.OpConfirm, &command.HoldArgs{Hold: "nobody k1"}, command.OutcomeFailed, "no-hold", ""},
		{command.OpRotateKeys, nil, command.OutcomeFailed, command.ReasonUnsupported, ""},
		{command.OpReboot, &command.RebootArgs{}, command.OutcomeFailed, command.ReasonUnsupported, ""},
		{command.OpWakeNow, &command.WakeNowArgs{}, command.OutcomeOK, "", `{"awake":true}`},
	}
	for _, tt := range tests {
		r := w.command(tt.op, tt.args)
		if r.Outcome != tt.outcome || r.Reason != tt.reason || tt.result != "" && string(r.Result) != tt.result {
			t.Errorf("%s %+v = %+v, want %s %q %s", tt.op, tt.args, r, tt.outcome, tt.reason, tt.result)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
