package manage_test

import (
	"context"
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/transport/mqtt/login"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
)

// rawPublish publishes payload on topic as an anonymous client would (the
// embedded broker lets anyone publish anything).
func rawPublish(t testing.TB, broker string, key *did.PrivateKey, topic string, payload []byte, contentType string, corr []byte) {
	t.Helper()
	u, _ := url.Parse(broker)
	ctx := ctxT(t)
	cm, err := autopaho.NewConnection(ctx, autopaho.ClientConfig{ServerUrls: []*url.URL{u}, KeepAlive: 30,
		CleanStartOnInitialConnection: true, ClientConfig: paho.ClientConfig{ClientID: "intruder"},
		ConnectPacketBuilder: func(cp *paho.Connect, _ *url.URL) (*paho.Connect, error) {
			return cp, login.Authenticate(cp, key, broker, time.Now(), nil)
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer cm.Disconnect(context.Background())
	if err := cm.AwaitConnection(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = cm.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Payload: payload,
		Properties: &paho.PublishProperties{ContentType: contentType, CorrelationData: corr}})
	if err != nil {
		t.Fatal(err)
	}
}

// rejectWorld is a device and its operator with one valid command run
// (sequence number 1000), for sending it what it must refuse.
type rejectWorld struct {
	t        *testing.T
	h        *harness
	op       *command.Operator
	stranger *did.PrivateKey
	dev      did.DID
	ok       command.Sent // the valid command
}

// sign signs spec with k, issued now and for the device unless spec says
// otherwise.
func (w *rejectWorld) sign(k *did.PrivateKey, spec command.Spec) *governed.Object {
	w.t.Helper()
	if spec.IssuedAt.IsZero() {
		spec.IssuedAt = w.h.Clock.Now()
	}
	if spec.Device.IsZero() {
		spec.Device = w.dev
	}
	o, err := command.Sign(k, spec)
	if err != nil {
		w.t.Fatal(err)
	}
	return o
}

// publish sends o through the operator's client and returns its id.
func (w *rejectWorld) publish(o *governed.Object) string {
	w.t.Helper()
	if _, err := w.op.PublishCommand(ctxT(w.t), w.h.Name, o, false); err != nil {
		w.t.Fatal(err)
	}
	return o.ID
}

// raw publishes payload on the command topic as anyone could, with corr
// as correlation data, and returns corr.
func (w *rejectWorld) raw(payload []byte, contentType, corr string) string {
	// The broker lets an operator publish anything on a command topic;
	// what is in it is the device's to check.
	rawPublish(w.t, w.h.Broker.URL(), w.h.OpKey, w.h.Server.Topics().Command(), payload, contentType, []byte(corr))
	return corr
}

// rejectCases are the commands a device refuses, how to send each and the
// answer it gets.
var rejectCases = []struct {
	name    string
	send    func(w *rejectWorld) string
	outcome command.Outcome
	reason  string
}{
	{"unknown key", func(w *rejectWorld) string {
		return w.publish(w.sign(w.stranger, command.Spec{Seq: 5000, Op: command.OpHalt}))
	}, command.OutcomeRejected, command.ReasonOperatorNotAllowed},
	{"out of sequence", func(w *rejectWorld) string {
		return w.publish(w.sign(w.h.OpKey, command.Spec{Seq: 1000, Op: command.OpHalt}))
	}, command.OutcomeRejected, command.ReasonOutOfSequence},
	{"expired", func(w *rejectWorld) string {
		// The operator's client refuses to publish it; a broker that held
		// it too long, or anyone, can.
		o := w.sign(w.h.OpKey, command.Spec{Seq: 6000, Op: command.OpHalt, IssuedAt: w.h.Clock.Now().Add(-2 * time.Hour), TTL: time.Hour})
		j, _ := o.MarshalJSON()
		return w.raw(j, envelope.ContentTypeJSON, o.ID)
	}, command.OutcomeRejected, "expired"},
	{"wrong device", func(w *rejectWorld) string {
		return w.publish(w.sign(w.h.OpKey, command.Spec{Device: w.stranger.DID(), Seq: 7000, Op: command.OpHalt}))
	}, command.OutcomeRejected, command.ReasonWrongDevice},
	{"forged", func(w *rejectWorld) string {
		o := w.sign(w.h.OpKey, command.Spec{Seq: 2000, Op: command.OpReboot})
		j, _ := o.MarshalJSON()
		return w.raw([]byte(strings.Replace(string(j), `"op":"reboot"`, `"op":"status"`, 1)), "", o.ID)
	}, command.OutcomeRejected, "signature-invalid"},
	{"unknown op", func(w *rejectWorld) string {
		o, err := governed.Sign(w.h.OpKey, governed.Template{IssuedAt: w.h.Clock.Now(), Semantic: governed.Semantic{Schema: command.Schema},
			Payload: map[string]any{"device": w.dev.String(), "seq": 3000, "op": "format-disk"}, Purpose: command.Purpose, TTL: time.Hour})
		if err != nil {
			w.t.Fatal(err)
		}
		return w.publish(o)
	}, command.OutcomeRejected, command.ReasonBadCommand},
	{"too long a lifetime", func(w *rejectWorld) string {
		return w.publish(w.sign(w.h.OpKey, command.Spec{Seq: 8000, Op: command.OpHalt, TTL: 365 * 24 * time.Hour}))
	}, command.OutcomeRejected, command.ReasonBadCommand},
	{"content type", func(w *rejectWorld) string { return w.raw([]byte("halt!"), "text/plain", "cmd-text") },
		command.OutcomeRejected, envelope.ReasonUnsupportedContentType},
	{"not JSON", func(w *rejectWorld) string { return w.raw([]byte("{halt"), "", "cmd-junk") },
		command.OutcomeRejected, "malformed"},
}

func TestRejectedCommandsAreReported(t *testing.T) {
	h := newHarness(t, mqtttest.StartEmbedded(t, nil))
	h.Wake()
	w := &rejectWorld{t: t, h: h, op: h.Operator(), stranger: mustKey(t), dev: h.Key.DID()}
	// A valid command first: it runs, and sets the operator's last
	// sequence number to 1000.
	w.ok = h.SendSpec(command.Spec{Device: w.dev, Seq: 1000, Op: command.OpStatus}, false)
	if r := h.Reply(w.ok.Object.ID); r.Outcome != command.OutcomeOK {
		t.Fatalf("valid command: %+v", r)
	}
	for _, tt := range rejectCases {
		t.Run(tt.name, func(t *testing.T) {
			w.t = t
			r := h.Reply(tt.send(w))
			if r.Outcome != tt.outcome || r.Reason != tt.reason {
				t.Errorf("reply = %+v, want %s (%s)", r, tt.outcome, tt.reason)
			}
			if r.Detail == "" {
				t.Error("reply without detail")
			}
		})
	}
	if got := h.Dev.Executed(); len(got) != 1 {
		t.Errorf("the device executed %d commands, want only the valid one", len(got))
	}
	st := h.Server.Stats()
	if st.Accepted != 1 || st.Rejected[command.ReasonOperatorNotAllowed] != 1 {
		t.Errorf("stats = %+v", st)
	}
	// The rejections left no trace: the last accepted sequence number is
	// still the valid command's.
	if seq, err := manage.LastSeq(h.State.DB, h.OpKey.DID()); err != nil || seq != 1000 {
		t.Errorf("LastSeq = %d, %v; want 1000", seq, err)
	}
}

func TestRejectionRateLimit(t *testing.T) {
	h := newHarness(t, mqtttest.StartEmbedded(t, nil))
	h.Hooks = append(h.Hooks, func(c *manage.Config) { c.RejectionsPerMinute = 2 })
	h.Wake()
	op := h.Operator()
	stranger := mustKey(t)
	var ids []string
	for i := range 4 {
		o, err := command.Sign(stranger, command.Spec{Device: h.Key.DID(), Seq: uint64(i + 1), Op: command.OpStatus, IssuedAt: h.Clock.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := op.PublishCommand(ctxT(t), h.Name, o, false); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, o.ID)
	}
	// Two answers, then silence until the minute passes.
	for _, id := range ids[:2] {
		h.Reply(id)
	}
	// A valid command is never rate-limited; its answer arrives after the
	// suppressed rejections were processed (commands run in order).
	valid := h.Send(command.OpStatus, nil)
	h.Reply(valid.Object.ID)
	if st := h.Server.Stats(); st.Suppressed != 2 {
		t.Errorf("Suppressed = %d, want 2", st.Suppressed)
	}
	h.Clock.Advance(time.Minute)
	o, _ := command.Sign(stranger, command.Spec{Device: h.Key.DID(), Seq: 9, Op: command.OpStatus, IssuedAt: h.Clock.Now()})
	if _, err := op.PublishCommand(ctxT(t), h.Name, o, false); err != nil {
		t.Fatal(err)
	}
	if r := h.Reply(o.ID); r.Reason != command.ReasonOperatorNotAllowed {
		t.Errorf("after a minute, reply = %+v", r)
	}
}

func TestCBORCommandGetsCBORReply(t *testing.T) {
	h := newHarness(t, mqtttest.StartEmbedded(t, nil))
	h.Wake()
	h.Seq = command.NextSeq(h.Seq, h.Clock.Now())
	s := h.SendSpec(command.Spec{Device: h.Key.DID(), Seq: h.Seq, Op: command.OpConfigGet,
		Args: &command.ConfigArgs{Key: "mode"}}, true)
	r := h.Reply(s.Object.ID)
	if r.Outcome != command.OutcomeOK || r.Op != command.OpConfigGet {
		t.Fatalf("reply = %+v", r)
	}
	var res map[string]any
	if err := json.Unmarshal(r.Result, &res); err != nil || res["op"] != command.OpConfigGet {
		t.Errorf("result = %s, %v", r.Result, err)
	}
	got := h.Dev.Executed()
	if len(got) != 1 || got[0].Args.(*command.ConfigArgs).Key != "mode" {
		t.Errorf("executed %+v", got)
	}
}

// TestCopiesOfACommandGetItsFirstReply: a command delivered again (QoS 1
// delivers at least once; a broker may replay) never runs twice, and the
// copy's answer is the command's true outcome: nothing while the first
// copy runs, the first reply again once it completed. Before, the copy
// was answered "rejected (replay)", and an operator who took the first
// answer to arrive was told that a command that ran had been refused.
func TestCopiesOfACommandGetItsFirstReply(t *testing.T) {
	h := newHarness(t, mqtttest.StartEmbedded(t, nil))
	release := make(chan struct{})
	h.Dev.Result = func(ctx context.Context, c manage.Command) manage.Result {
		if c.Op == command.OpDrain {
			<-release
		}
		return manage.OK(map[string]any{"op": c.Op})
	}
	h.Wake()
	op := h.Operator()
	running := h.SendSpec(command.Spec{Device: h.Key.DID(), Seq: 10, Op: command.OpDrain}, false)
	if _, err := h.Dev.WaitExecuted(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := op.PublishCommand(ctxT(t), h.Name, running.Object, false); err != nil {
		t.Fatal(err)
	}
	awaitRejected(t, h, "replay", 1)
	close(release)
	first := h.Reply(running.Object.ID)
	if first.Outcome != command.OutcomeOK || first.Op != command.OpDrain {
		t.Fatalf("the first answer to a command copied while it ran = %+v, want its outcome ok", first)
	}
	// Completed: the copy gets the same reply.
	if _, err := op.PublishCommand(ctxT(t), h.Name, running.Object, false); err != nil {
		t.Fatal(err)
	}
	again := h.Reply(running.Object.ID)
	if !reflect.DeepEqual(again, first) {
		t.Errorf("the answer to a copy of a completed command = %+v, want the first reply %+v", again, first)
	}
	if n := len(h.Dev.Executed()); n != 1 {
		t.Errorf("the device executed the command %d times, want once", n)
	}
	awaitRejected(t, h, "replay", 2)
}

// awaitRejected waits until the server counted n refusals for reason.
func awaitRejected(t *testing.T, h *harness, reason string, n int) {
	t.Helper()
	ctx := ctxT(t)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for h.Server.Stats().Rejected[reason] < n {
		select {
		case <-ctx.Done():
			t.Fatalf("the device never counted %d refusals for %s: %+v", n, reason, h.Server.Stats())
		case <-tick.C:
		}
	}
}
