package runtime_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/transport/relay/console"
	"github.com/torpor-dev/torpor/wake"
)

// cmdStart is outside the test agent's hourly window.
var cmdStart = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

// cmdWorld is an agent with operator commands, its relay and the embedded
// MQTT broker, all on one fake clock, and an operator (test/worldtest).
type cmdWorld struct{ *worldtest.Device }

func newCmdWorld(t *testing.T, mode wake.Mode) *cmdWorld { return newCmdWorldWith(t, mode, nil) }

// newCmdWorldWith is newCmdWorld with opt changing the configurations
// before the agent and its commands are made.
func newCmdWorldWith(t *testing.T, mode wake.Mode, opt func(w *cmdWorld, cfg *runtime.Config, cc *manage.CommandsConfig)) *cmdWorld {
	o := worldtest.DeviceOptions{Mode: mode, Key: runtimetest.Key(t, 9), OpKey: runtimetest.Key(t, 10), Start: cmdStart}
	if opt != nil {
		o.Configure = func(a *worldtest.Device, cfg *runtime.Config, cc *manage.CommandsConfig) { opt(&cmdWorld{a}, cfg, cc) }
	}
	return &cmdWorld{worldtest.NewDevice(t, o)}
}

// post sends a message to the agent through the relay, as a sender would,
// and returns the status and Retry-After.
func (w *cmdWorld) post(sender *did.PrivateKey) (int, int) {
	w.T.Helper()
	obj := runtimetest.Object(w.T, sender, "comms:message", w.Clock.Now(), time.Hour, nil)
	return w.Post(sender, runtimetest.Body(w.T, runtimetest.DataPart(w.T, obj)))
}

// TestSetModeOverMQTTChangesWhatTheRelayTellsSenders: a set-mode sent
// while the agent sleeps waits in the broker, runs at the next window, and
// from then on the relay answers senders live instead of 503.
func TestSetModeOverMQTTChangesWhatTheRelayTellsSenders(t *testing.T) {
	w := newCmdWorld(t, wake.HourlyWake)
	w.Run()
	boot := w.NextWake()
	start, _ := w.Window.Next(cmdStart)
	st := w.AwaitStatus(func(s envelope.Status) bool { return s.State == envelope.StateAsleep })
	if st.Mode != "hourly_wake" || st.NextWake == nil || !st.NextWake.Equal(start) || !boot.NextWake.Equal(start) {
		t.Fatalf("status after the boot wake = %+v, want asleep until %v", st, start)
	}
	sender := runtimetest.Key(t, 11)
	if code, ra := w.post(sender); code != http.StatusServiceUnavailable || ra == 0 {
		t.Fatalf("sender while asleep: %d Retry-After %d, want 503 with a Retry-After", code, ra)
	}

	id := w.Send(command.OpSetMode, &command.SetModeArgs{Mode: "always_on"})
	w.Clock.Set(start) // the window opens: the agent wakes and takes the command
	if r := w.Reply(id); r.Outcome != command.OutcomeOK {
		t.Fatalf("set-mode reply = %+v", r)
	}
	// The window's wake ends on the mode change; the agent wakes again in
	// always_on and publishes it.
	w.NextWake()
	w.WaitPhase(runtime.PhasePublish)
	if code, _ := w.post(sender); code != http.StatusOK {
		t.Fatalf("sender after set-mode always_on: %d, want 200 (live)", code)
	}
	if m, _ := w.Agent.Mode(); m != wake.AlwaysOn {
		t.Errorf("agent mode = %s", m)
	}
}

// TestOperatorCommandsOnTheAgent runs halt, resume, status, config and
// reconcile through MQTT on a live agent.
func TestOperatorCommandsOnTheAgent(t *testing.T) {
	w := newCmdWorld(t, wake.AlwaysOn)
	w.Run()
	w.AwaitStatus(func(s envelope.Status) bool { return s.State == envelope.StateAwake })

	halt := w.Command(command.OpHalt, &command.NoteArgs{Note: "maintenance"})
	if halt.Outcome != command.OutcomeOK {
		t.Fatalf("halt: %+v", halt)
	}
	w.AwaitStatus(func(s envelope.Status) bool { return s.Halted })
	r := w.Command(command.OpStatus, nil)
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
	if want := "maintenance — " + w.OpKey.DID().String() + " (MQTT command " + halt.Command + ")"; rep.Halt.Note != want {
		t.Errorf("halt note %q, want %q", rep.Halt.Note, want)
	}
	if r := w.Command(command.OpResume, &command.NoteArgs{}); r.Outcome != command.OutcomeOK || string(r.Result) != `{"halted":false,"ran":0}` {
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
		r := w.Command(tt.op, tt.args)
		if r.Outcome != tt.outcome || r.Reason != tt.reason || tt.result != "" && string(r.Result) != tt.result {
			t.Errorf("%s %+v = %+v, want %s %q %s", tt.op, tt.args, r, tt.outcome, tt.reason, tt.result)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestHaltShowsAtTheRelayAtOnce: a halt over MQTT republishes the live
// agent's signed status to the relay at once, so that the fleet view shows
// it halted without waiting for the next pulse (an hour; the fake clock
// does not move here), and a resume likewise.
func TestHaltShowsAtTheRelayAtOnce(t *testing.T) {
	w := newCmdWorld(t, wake.AlwaysOn)
	w.Run()
	w.AwaitStatus(func(s envelope.Status) bool { return s.State == envelope.StateAwake })
	for _, halt := range []bool{true, false} {
		op, args := command.OpHalt, &command.NoteArgs{Note: "maintenance"}
		if !halt {
			op = command.OpResume
		}
		if r := w.Command(op, args); r.Outcome != command.OutcomeOK {
			t.Fatalf("%s: %+v", op, r)
		}
		ctx := w.Ctx()
		for {
			st, err := w.Relay.States.Get(ctx, w.Key.DID().String())
			if err != nil {
				t.Fatal(err)
			}
			if ws, err := console.VerifyStatus(st.Status, w.Key.DID()); err == nil && ws.Halted == halt {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("after %s the relay's stored status never said halted=%v", op, halt)
			case <-time.After(5 * time.Millisecond): // real time: the publish is a loopback round trip
			}
		}
	}
}
