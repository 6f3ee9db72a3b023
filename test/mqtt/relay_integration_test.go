//go:build integration

package mqtt

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
	"github.com/torpor-dev/torpor/wake"
)

// world is a real relay, a real agent with operator commands, and a
// broker, on one fake clock (test/worldtest; the broker keeps real time),
// plus an operator, the agent's owner, and a sender. The agent runs, and
// its application answers with a receipt naming an effect.
type world struct {
	*worldtest.Device
	sender *did.PrivateKey
}

func newWorld(t *testing.T, b mqtttest.Broker, mode wake.Mode) *world {
	w := &world{sender: didtest.New(t)}
	w.Device = worldtest.NewDevice(t, worldtest.DeviceOptions{Mode: mode, Name: name, Broker: b,
		Configure: func(d *worldtest.Device, cfg *runtime.Config, _ *manage.CommandsConfig) { cfg.Owner = d.OpKey.DID() }})
	w.Sink.AnswerWith(func(deliver.Delivery) deliver.Outcome {
		return deliver.Outcome{OK: true, Receipt: []byte(`{"effectId":"fx-1"}`)}
	})
	w.Run()
	return w
}

// post sends an object to the agent through the relay, as a sender, and
// returns the HTTP status and Retry-After.
func (w *world) post(purpose string, payload any) (int, int) {
	w.T.Helper()
	obj := runtimetest.Object(w.T, w.sender, purpose, w.Clock.Now(), time.Hour, payload)
	return w.Post(w.sender, runtimetest.Body(w.T, runtimetest.DataPart(w.T, obj)))
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
		w.NextWake() // the boot wake, outside the window
		start, end := w.Window.Next(w.Start)
		w.AwaitStatus(func(s envelope.Status) bool { return s.State == envelope.StateAsleep })
		code, ra := w.post("comms:message", nil)
		at := w.Clock.Now().Add(time.Duration(ra) * time.Second)
		if code != http.StatusServiceUnavailable || at.Before(start) || !at.Before(end) {
			t.Fatalf("while asleep: %d, Retry-After %ds; want 503 into [%v, %v)", code, ra, start, end)
		}
		id := w.Send(command.OpSetMode, &command.SetModeArgs{Mode: "always_on"})
		w.Clock.Set(start)
		if r := w.Reply(id); r.Outcome != command.OutcomeOK {
			t.Fatalf("set-mode always_on: %+v", r)
		}
		w.NextWake() // the window's wake ends on the mode change
		w.WaitPhase(runtime.PhasePublish)
		if code, _ := w.post("comms:message", nil); code != http.StatusOK {
			t.Fatalf("after set-mode always_on: %d, want 200", code)
		}

		wakeAt := w.Clock.Now().Add(2 * time.Hour).Truncate(time.Second)
		id = w.Send(command.OpSetMode, &command.SetModeArgs{Mode: "sleep", WakeAt: &wakeAt})
		if r := w.Reply(id); r.Outcome != command.OutcomeOK {
			t.Fatalf("set-mode sleep: %+v", r)
		}
		w.NextWake() // the always_on wake ends; the agent announces sleep
		st := w.AwaitStatus(func(s envelope.Status) bool { return s.State == envelope.StateAsleep })
		if st.Mode != "sleep" || st.NextWake == nil || !st.NextWake.Equal(wakeAt) {
			t.Errorf("status after set-mode sleep = %+v", st)
		}
		// A sleeping agent's relay queues, with a Retry-After into the
		// scheduled wake (the agent announces the mode in force when a
		// mode change ends its wake).
		code, ra = w.post("comms:message", nil)
		at = w.Clock.Now().Add(time.Duration(ra) * time.Second)
		if code != http.StatusServiceUnavailable || at.Before(wakeAt) || !at.Before(wakeAt.Add(wake.DefaultLength)) {
			t.Fatalf("after set-mode sleep: %d, Retry-After %ds; want 503 with a Retry-After into the scheduled wake at %v", code, ra, wakeAt)
		}
		if got := w.Sink.Purposes(); len(got) != 2 {
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
		w.AwaitStatus(func(s envelope.Status) bool { return s.State == envelope.StateAwake })
		w.WaitPhase(runtime.PhasePublish)
		if code, _ := w.post("action:open-valve", map[string]any{"idempotencyKey": "valve-7"}); code != http.StatusOK {
			t.Fatalf("posting the action: %d", code)
		}
		r := w.Reply(w.Send(command.OpStatus, nil))
		var rep struct {
			Holds []struct{ Key, Purpose string }
		}
		if err := json.Unmarshal(r.Result, &rep); err != nil || len(rep.Holds) != 1 || rep.Holds[0].Purpose != "action:open-valve" {
			t.Fatalf("status shows holds %s, %v", r.Result, err)
		}
		if got := w.Sink.Purposes(); len(got) != 0 {
			t.Fatalf("the action ran before it was confirmed: %v", got)
		}
		c := w.Reply(w.Send(command.OpConfirm, &command.HoldArgs{Hold: rep.Holds[0].Key}))
		if c.Outcome != command.OutcomeOK {
			t.Fatalf("confirm: %+v", c)
		}
		if got := w.Sink.Purposes(); len(got) != 1 || got[0] != "action:open-valve" {
			t.Errorf("delivered %v, want the action once", got)
		}
		// Confirming again finds nothing held: the action cannot run twice.
		if again := w.Reply(w.Send(command.OpConfirm, &command.HoldArgs{Hold: rep.Holds[0].Key})); again.Outcome != command.OutcomeFailed || again.Reason != "no-hold" {
			t.Errorf("second confirm: %+v", again)
		}
	})
}
