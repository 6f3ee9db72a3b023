package worldtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/waketest"
)

// Device is a whole device world on one fake clock: a relay on loopback, a
// broker (which keeps real time), a real agent with operator commands
// linked to both, and an operator watching the device over MQTT. Its
// helpers fail the test after 30 s of real time.
type Device struct {
	T       *testing.T
	Clock   *clocktest.Clock
	Start   time.Time // where Clock started
	Key     *did.PrivateKey
	OpKey   *did.PrivateKey // the operator's, allowed on the agent and the broker
	Name    string          // the device's name on the broker
	Window  wake.Window
	Relay   *Relay
	Broker  mqtttest.Broker
	Agent   *runtime.Agent
	Cmds    *manage.Commands
	Op      *command.Operator
	Witness *mqtttest.Witness
	Sink    *deliver.Recorder // what the agent delivers, unless Configure routes elsewhere
	Wakes   chan runtime.WakeReport
	Phases  chan runtime.Phase // the phases of the wake not yet reported
	Done    chan error         // Run's result, once Run ends
	seq     uint64
	stop    context.CancelFunc
}

// DeviceOptions says what differs between Device worlds.
type DeviceOptions struct {
	Mode       wake.Mode
	Key, OpKey *did.PrivateKey // nil: a new key each
	Name       string          // nil: "pi-7"
	// Broker is the broker the agent and the operator use; nil starts
	// an embedded one. The operator is added to an embedded broker.
	Broker mqtttest.Broker
	// Start is the clock's start; zero: half an hour after the agent's
	// window opens in the hour of 2026-06-01 12:00 UTC, so that it boots
	// asleep.
	Start time.Time
	// Configure changes the configurations before the agent and its
	// commands are made.
	Configure func(w *Device, cfg *runtime.Config, cc *manage.CommandsConfig)
}

// NewDevice makes the world; the agent runs from Run. The relay's and
// agent's files are under a temporary directory of t's.
func NewDevice(t *testing.T, o DeviceOptions) *Device {
	t.Helper()
	w := &Device{T: t, Key: o.Key, OpKey: o.OpKey, Name: o.Name, Broker: o.Broker, Sink: &deliver.Recorder{},
		Wakes: make(chan runtime.WakeReport, 16), Phases: make(chan runtime.Phase, 1024), Done: make(chan error, 1)}
	w.defaults()
	w.Window = wake.SpreadWindowFor(w.Key.DID().String())
	w.Window.Length = 5 * time.Minute
	if w.Start = o.Start; w.Start.IsZero() {
		opens, _ := w.Window.Next(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
		w.Start = opens.Add(30 * time.Minute)
	}
	w.Clock = clocktest.New(w.Start)
	dir := t.TempDir()
	w.Relay = Start(t, relay.Config{Clock: w.Clock})
	cfg, cc := w.config(dir, o.Mode), manage.CommandsConfig{Broker: w.Broker.URL(), Name: w.Name,
		Operators: []did.DID{w.OpKey.DID()}, Logger: Logger(t)}
	if o.Configure != nil {
		o.Configure(w, &cfg, &cc)
	}
	var err error
	if w.Agent, err = runtime.New(cfg); err != nil {
		t.Fatal(err)
	}
	if w.Cmds, err = manage.NewCommands(w.Agent, cc); err != nil {
		t.Fatal(err)
	}
	w.Agent.SetManagement(w.Cmds)
	if w.Op, err = command.DialOperator(w.Ctx(), command.OperatorConfig{Broker: w.Broker.URL(), Key: w.OpKey, Clock: w.Clock}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Op.Close(context.Background()) })
	if err := w.Op.Watch(w.Ctx(), w.Name); err != nil {
		t.Fatal(err)
	}
	w.Witness = mqtttest.NewWitness(t, w.Broker, mqtt.Topics{Device: w.Name}.Command())
	return w
}

func (w *Device) defaults() {
	for _, k := range []**did.PrivateKey{&w.Key, &w.OpKey} {
		if *k == nil {
			*k = didtest.New(w.T)
		}
	}
	if w.Name == "" {
		w.Name = "pi-7"
	}
	if w.Broker == nil {
		w.Broker = mqtttest.StartEmbedded(w.T, nil)
	}
	if e, ok := w.Broker.(*mqtttest.Embedded); ok {
		e.AddOperator(w.OpKey.DID())
	}
}

// config is the agent's configuration, its data under dir: its hooks hand
// w each wake report and phase, dropping the phases of a wake once it is
// reported.
func (w *Device) config(dir string, mode wake.Mode) runtime.Config {
	return runtime.Config{
		PipelineConfig: runtime.PipelineConfig{Key: w.Key, Purposes: purpose.Set{"comms:*", "action:*"},
			Consequential: purpose.Set{"action:*"}, AllowPlaintext: true,
			Routes: []deliver.Route{{Pattern: "*", Name: "sink", Handler: w.Sink}}, Clock: w.Clock},
		Hooks: runtime.Hooks{
			OnWake: func(r runtime.WakeReport) {
				for len(w.Phases) > 0 {
					<-w.Phases
				}
				w.Wakes <- r
			},
			OnPhase: func(p runtime.Phase) {
				select {
				case w.Phases <- p:
				default:
				}
			},
			Kernel: waketest.NewKernelClock(time.Hour),
			Rand:   bytes.NewReader(make([]byte, 1<<16)),
		},
		Store:    runtime.Store{DataDir: filepath.Join(dir, "agent")},
		Relay:    runtime.Relay{URL: w.Relay.URL},
		Schedule: runtime.Schedule{Mode: mode, WindowLength: w.Window.Length},
		Logger:   Logger(w.T),
	}
}

// Run runs the agent until Stop or the end of the test.
func (w *Device) Run() {
	ctx, cancel := context.WithCancel(context.Background())
	w.stop = cancel
	go func() { w.Done <- w.Agent.Run(ctx) }()
	w.T.Cleanup(func() {
		cancel()
		w.Done <- <-w.Done // Stop's caller may have taken it
		w.Cmds.Close(context.Background())
	})
}

// Stop cancels Run; its result arrives on Done.
func (w *Device) Stop() { w.stop() }

// Ctx is a context that ends after 30 s or with the test.
func (w *Device) Ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	w.T.Cleanup(cancel)
	return ctx
}

// NextWake returns the next wake's report.
func (w *Device) NextWake() runtime.WakeReport {
	w.T.Helper()
	select {
	case r := <-w.Wakes:
		return r
	case err := <-w.Done:
		w.Done <- err
		w.T.Fatalf("Run ended: %v", err)
	case <-w.Ctx().Done():
		w.T.Fatal("no wake")
	}
	return runtime.WakeReport{}
}

// WaitPhase waits until a phase named name completes.
func (w *Device) WaitPhase(name string) runtime.Phase {
	w.T.Helper()
	ctx := w.Ctx()
	for {
		select {
		case p := <-w.Phases:
			if p.Name == name {
				return p
			}
		case <-ctx.Done():
			w.T.Fatalf("phase %s never completed", name)
		}
	}
}

// AwaitStatus waits until the device's status satisfies ok (statuses
// arrive as the device publishes them).
func (w *Device) AwaitStatus(ok func(envelope.Status) bool) envelope.Status {
	w.T.Helper()
	ctx := w.Ctx()
	for {
		st, _, err := w.Op.Status(ctx, w.Name, w.Key.DID())
		if err != nil {
			w.T.Fatalf("status: %v", err)
		}
		if ok(st) {
			return st
		}
	}
}

// Send sends the operator's command op with args under the next sequence
// number, checks that the broker holds it for the device, and returns its
// id.
func (w *Device) Send(op string, args any) string {
	w.T.Helper()
	w.seq = command.NextSeq(w.seq, w.Clock.Now())
	s, err := w.Op.Send(w.Ctx(), w.Name, command.Spec{Device: w.Key.DID(), Seq: w.seq, Op: op, Args: args}, false)
	if err != nil {
		w.T.Fatal(err)
	}
	if s.NoSubscribers {
		w.T.Fatal("no broker session for the device")
	}
	w.Witness.Await(w.T, s.Object.ID)
	return s.Object.ID
}

// Reply waits for the device's reply to the command id.
func (w *Device) Reply(id string) command.Reply {
	w.T.Helper()
	r, _, err := w.Op.AwaitReply(w.Ctx(), w.Name, id, w.Key.DID())
	if err != nil {
		w.T.Fatalf("reply to %s: %v", id, err)
	}
	return r
}

// Command sends a command and returns the device's reply.
func (w *Device) Command(op string, args any) command.Reply {
	w.T.Helper()
	return w.Reply(w.Send(op, args))
}

// Post sends body (a JSON-RPC request, A2A 1.0) to the agent through the
// relay as sender would, with a DID Bearer token issued at the clock's
// now, and returns the HTTP status and Retry-After.
func (w *Device) Post(sender *did.PrivateKey, body []byte) (int, int) {
	w.T.Helper()
	return Post(w.T, w.Relay.URL, w.Key.DID(), sender, w.Clock.Now(), body)
}

// Post posts a JSON-RPC body (A2A 1.0) to agent through the relay at
// relayURL (also its public URL), with sender's DID Bearer token issued
// at now, and returns the HTTP status and Retry-After (seconds, 0 for
// none).
func Post(t testing.TB, relayURL string, agent did.DID, sender *did.PrivateKey, now time.Time, body []byte) (int, int) {
	t.Helper()
	req, _ := http.NewRequest("POST", relayURL+"/a/"+agent.String()+"/a2a/jsonrpc", bytes.NewReader(body))
	tok, err := bearer.Issue(sender, relayURL, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.VersionHeader, "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	return resp.StatusCode, ra
}

// Logger is a logger that writes to t's log from Info up.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tlog struct{ t testing.TB }

func (l tlog) Write(p []byte) (int, error) { l.t.Log(string(p)); return len(p), nil }

// RunPublished runs the agent cfg makes until the test ends or stop is
// called, and returns once its first wake has published its state, so
// that its relay forwards requests to it live. cfg's OnPhase hook, if
// any, still sees every phase.
func RunPublished(t testing.TB, cfg runtime.Config) (a *runtime.Agent, stop func()) {
	t.Helper()
	published := make(chan struct{}, 1)
	next := cfg.Hooks.OnPhase
	cfg.Hooks.OnPhase = func(p runtime.Phase) {
		if next != nil {
			next(p)
		}
		if p.Name == runtime.PhasePublish {
			select {
			case published <- struct{}{}:
			default:
			}
		}
	}
	a, err := runtime.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Logf("agent %s: %v", cfg.Name, err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case <-published:
	case err := <-done:
		done <- err // for stop
		t.Fatalf("agent %s stopped before it published: %v", cfg.Name, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("agent %s did not publish its state within 30 s", cfg.Name)
	}
	return a, stop
}
