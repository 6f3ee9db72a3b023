package manage_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/manage/managetest"
	"github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
)

// start is a fixed instant for the fake clocks.
var start = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// harness is one device (Client + recording Device + bbolt state) and one
// operator on one broker.
type harness struct {
	t        testing.TB
	broker   mqtttest.Broker
	clk      *clocktest.Clock
	dev      *managetest.Device
	devKey   *did.PrivateKey
	opKey    *did.PrivateKey
	state    *mqtttest.State
	path     string
	client   *manage.Server
	op       *command.Operator
	lastSeq  uint64
	name     string
	cfgHooks []func(*manage.Config)
	witness  *mqtttest.Witness
	// deviceURL and operatorURL, when set, are where the device and the
	// operator connect (a Proxy).
	deviceURL, operatorURL string
}

func newHarness(t testing.TB, b mqtttest.Broker) *harness {
	t.Helper()
	h := &harness{t: t, broker: b, clk: clocktest.New(start), dev: &managetest.Device{},
		devKey: mustKey(t), opKey: mustKey(t), path: filepath.Join(t.TempDir(), "agent.db"), name: "dev-1"}
	h.state = mqtttest.OpenState(t, h.path, h.clk)
	if e, ok := b.(*mqtttest.Embedded); ok {
		e.AddOperator(h.opKey.DID())
	}
	return h
}

func mustKey(t testing.TB) *did.PrivateKey {
	t.Helper()
	k, err := did.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// wake starts the device's client and waits until it is connected.
func (h *harness) wake() {
	h.t.Helper()
	url := h.broker.URL()
	if h.deviceURL != "" {
		url = h.deviceURL
	}
	cfg := manage.Config{Config: mqtt.Config{Broker: url, Name: h.name, Key: h.devKey, DB: h.state.DB, Timing: mqtt.Timing{Backoff: func(n int) time.Duration { return time.Duration(n) * 50 * time.Millisecond }}, Clock: h.clk, Logger: testLogger(h.t)}, Operators: []did.DID{h.opKey.DID()}, Replay: h.state.Replay, Ledger: h.state.Ledger, Device: h.dev}
	if _, bench := h.t.(*testing.B); bench {
		cfg.Logger = nil // logging every message would be what a benchmark measures
	}
	for _, f := range h.cfgHooks {
		f(&cfg)
	}
	c, err := manage.Start(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.client = c
	h.t.Cleanup(func() {
		select {
		case <-c.Done():
		default:
			c.Abort()
		}
	})
	if err := c.AwaitConnection(ctxT(h.t)); err != nil {
		h.t.Fatal(err)
	}
}

// sleep ends the device's session cleanly.
func (h *harness) sleep(next time.Time) {
	h.t.Helper()
	if err := h.client.Sleep(ctxT(h.t), next); err != nil {
		h.t.Fatalf("Sleep: %v", err)
	}
}

// operator connects the operator (once).
func (h *harness) operator() *command.Operator {
	h.t.Helper()
	if h.op == nil {
		url := h.broker.URL()
		if h.operatorURL != "" {
			url = h.operatorURL
		}
		op, err := command.DialOperator(ctxT(h.t), command.OperatorConfig{Broker: url, Key: h.opKey, Clock: h.clk})
		if err != nil {
			h.t.Fatal(err)
		}
		h.t.Cleanup(func() { op.Close(context.Background()) })
		if err := op.Watch(ctxT(h.t), h.name); err != nil {
			h.t.Fatal(err)
		}
		h.op = op
	}
	return h.op
}

// send signs and publishes a command with the next sequence number.
func (h *harness) send(op string, args any) command.Sent {
	h.t.Helper()
	h.lastSeq = command.NextSeq(h.lastSeq, h.clk.Now())
	return h.sendSpec(command.Spec{Device: h.devKey.DID(), Seq: h.lastSeq, Op: op, Args: args}, false)
}

func (h *harness) sendSpec(spec command.Spec, asCBOR bool) command.Sent {
	h.t.Helper()
	if h.witness == nil {
		h.witness = mqtttest.NewWitness(h.t, h.broker, mqtt.Topics{Device: h.name}.Command())
	}
	s, err := h.operator().Send(ctxT(h.t), h.name, spec, asCBOR)
	if err != nil {
		h.t.Fatal(err)
	}
	h.witness.Await(h.t, s.Object.ID)
	return s
}

func (h *harness) reply(id string) command.Reply {
	h.t.Helper()
	r, _, err := h.operator().AwaitReply(ctxT(h.t), h.name, id, h.devKey.DID())
	if err != nil {
		h.t.Fatalf("waiting for the reply to %s: %v", id, err)
	}
	return r
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestCommandWhileAsleepRunsAtNextWake(t *testing.T) {
	h := newHarness(t, mqtttest.StartEmbedded(t, nil))
	h.wake() // the first connection creates the broker session
	next := start.Add(time.Hour)
	h.sleep(next)

	st, _, err := h.operator().Status(ctxT(t), h.name, h.devKey.DID())
	if err != nil {
		t.Fatal(err)
	}
	if st.State != envelope.StateAsleep || st.NextWake == nil || !st.NextWake.Equal(next) {
		t.Errorf("status while asleep = %+v, want asleep until %v", st, next)
	}
	sent := h.send(command.OpSetMode, &command.SetModeArgs{Mode: "sleep"})
	if sent.NoSubscribers {
		t.Fatal("the broker says no session subscribes to the command topic")
	}
	if n := len(h.dev.Executed()); n != 0 {
		t.Fatalf("%d commands executed while asleep", n)
	}

	h.clk.Advance(time.Hour)
	h.wake()
	r := h.reply(sent.Object.ID)
	if r.Outcome != command.OutcomeOK || r.Op != command.OpSetMode {
		t.Errorf("reply = %+v, want ok for set-mode", r)
	}
	got := h.dev.Executed()
	if len(got) != 1 || got[0].ID != sent.Object.ID || got[0].Args.(*command.SetModeArgs).Mode != "sleep" {
		t.Errorf("executed %+v, want the set-mode command", got)
	}
	h.sleep(time.Time{})
}

func TestBacklogRunsInSequenceOrder(t *testing.T) {
	h := newHarness(t, mqtttest.StartEmbedded(t, nil))
	h.wake()
	h.sleep(start.Add(time.Hour))
	// Ten commands issued in the same second: mochi may hand them back
	// in any order; the device must run them by sequence number.
	var ids []string
	for i := range 10 {
		s := h.send(command.OpConfigSet, &command.ConfigArgs{Key: "k", Value: ptr(fmt.Sprint(i))})
		ids = append(ids, s.Object.ID)
	}
	h.wake()
	for _, id := range ids {
		if r := h.reply(id); r.Outcome != command.OutcomeOK {
			t.Errorf("reply to %s = %+v, want ok", id, r)
		}
	}
	got := h.dev.Executed()
	if len(got) != 10 {
		t.Fatalf("executed %d commands, want 10", len(got))
	}
	for i, c := range got {
		if c.ID != ids[i] || *c.Args.(*command.ConfigArgs).Value != fmt.Sprint(i) {
			t.Errorf("command %d executed = %s (value %s), want %s", i, c.ID, *c.Args.(*command.ConfigArgs).Value, ids[i])
		}
	}
}

func ptr[T any](v T) *T { return &v }
