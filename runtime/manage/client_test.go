package manage_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
)

// start is a fixed instant for the fake clocks.
var start = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// harness is one device (manage.Server + recording Device + bbolt state)
// and one operator on one broker (worldtest.Session).
type harness struct{ *worldtest.Session }

func newHarness(t testing.TB, b mqtttest.Broker) *harness {
	t.Helper()
	h := &harness{worldtest.NewSession(t, b, "dev-1", start)}
	if _, bench := t.(*testing.B); !bench {
		h.Logger = testLogger(t) // logging every message would be what a benchmark measures
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
	h.Wake() // the first connection creates the broker session
	next := start.Add(time.Hour)
	h.Sleep(next)

	st, _, err := h.Operator().Status(ctxT(t), h.Name, h.Key.DID())
	if err != nil {
		t.Fatal(err)
	}
	if st.State != envelope.StateAsleep || st.NextWake == nil || !st.NextWake.Equal(next) {
		t.Errorf("status while asleep = %+v, want asleep until %v", st, next)
	}
	sent := h.Send(command.OpSetMode, &command.SetModeArgs{Mode: "sleep"})
	if sent.NoSubscribers {
		t.Fatal("the broker says no session subscribes to the command topic")
	}
	if n := len(h.Dev.Executed()); n != 0 {
		t.Fatalf("%d commands executed while asleep", n)
	}

	h.Clock.Advance(time.Hour)
	h.Wake()
	r := h.Reply(sent.Object.ID)
	if r.Outcome != command.OutcomeOK || r.Op != command.OpSetMode {
		t.Errorf("reply = %+v, want ok for set-mode", r)
	}
	got := h.Dev.Executed()
	if len(got) != 1 || got[0].ID != sent.Object.ID || got[0].Args.(*command.SetModeArgs).Mode != "sleep" {
		t.Errorf("executed %+v, want the set-mode command", got)
	}
	h.Sleep(time.Time{})
}

func TestBacklogRunsInSequenceOrder(t *testing.T) {
	h := newHarness(t, mqtttest.StartEmbedded(t, nil))
	h.Wake()
	h.Sleep(start.Add(time.Hour))
	// Ten commands issued in the same second: mochi may hand them back
	// in any order; the device must run them by sequence number.
	var ids []string
	for i := range 10 {
		s := h.Send(command.OpConfigSet, &command.ConfigArgs{Key: "k", Value: ptr(fmt.Sprint(i))})
		ids = append(ids, s.Object.ID)
	}
	h.Wake()
	for _, id := range ids {
		if r := h.Reply(id); r.Outcome != command.OutcomeOK {
			t.Errorf("reply to %s = %+v, want ok", id, r)
		}
	}
	got := h.Dev.Executed()
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
