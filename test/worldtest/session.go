package worldtest

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/manage/managetest"
	"github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
)

// Session is one device's MQTT side without its agent (a manage.Server
// over a recording managetest.Device and its bbolt state) and one
// operator on a broker, on a fake clock. Its helpers fail the test after
// 30 s of real time.
type Session struct {
	T      testing.TB
	Broker mqtttest.Broker
	Clock  *clocktest.Clock
	Dev    *managetest.Device
	Key    *did.PrivateKey // the device's
	OpKey  *did.PrivateKey // the operator's, allowed on the device and an embedded broker
	Name   string          // the device's name on the broker
	Path   string          // the device's bbolt file
	State  *mqtttest.State
	Server *manage.Server // the device's session, from Wake on
	// DeviceURL and OperatorURL, when set, are where the device and the
	// operator connect (a Proxy); the broker's URL otherwise.
	DeviceURL, OperatorURL string
	// Logger is the device's; Backoff its reconnection delays (n×50 ms
	// unless set).
	Logger  *slog.Logger
	Backoff func(n int) time.Duration
	// Hooks change the device's configuration at every Wake.
	Hooks []func(*manage.Config)
	// Seq is the sequence number Send used last.
	Seq     uint64
	op      *command.Operator
	witness *mqtttest.Witness
}

// NewSession makes the session of the device name on b, its clock at start;
// the device connects at Wake.
func NewSession(t testing.TB, b mqtttest.Broker, name string, start time.Time) *Session {
	t.Helper()
	w := &Session{T: t, Broker: b, Clock: clocktest.New(start), Dev: &managetest.Device{}, Key: didtest.New(t), OpKey: didtest.New(t),
		Name: name, Path: filepath.Join(t.TempDir(), "agent.db"),
		Backoff: func(n int) time.Duration { return time.Duration(n) * 50 * time.Millisecond }}
	w.State = mqtttest.OpenState(t, w.Path, w.Clock)
	if e, ok := b.(*mqtttest.Embedded); ok {
		e.AddOperator(w.OpKey.DID())
	}
	return w
}

// Ctx is a context that ends after 30 s or with the test.
func (w *Session) Ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	w.T.Cleanup(cancel)
	return ctx
}

func orURL(url string, b mqtttest.Broker) string {
	if url != "" {
		return url
	}
	return b.URL()
}

// Wake starts the device's session and waits until it is connected.
func (w *Session) Wake() {
	w.T.Helper()
	cfg := manage.Config{Config: mqtt.Config{Broker: orURL(w.DeviceURL, w.Broker), Name: w.Name, Key: w.Key, DB: w.State.DB,
		Timing: mqtt.Timing{Backoff: w.Backoff}, Clock: w.Clock, Logger: w.Logger},
		Operators: []did.DID{w.OpKey.DID()}, Replay: w.State.Replay, Ledger: w.State.Ledger, Device: w.Dev}
	for _, f := range w.Hooks {
		f(&cfg)
	}
	s, err := manage.Start(cfg)
	if err != nil {
		w.T.Fatal(err)
	}
	w.Server = s
	w.T.Cleanup(func() {
		select {
		case <-s.Done():
		default:
			s.Abort()
		}
	})
	if err := s.AwaitConnection(w.Ctx()); err != nil {
		w.T.Fatal(err)
	}
}

// Sleep ends the device's session cleanly, announcing next.
func (w *Session) Sleep(next time.Time) {
	w.T.Helper()
	if err := w.Server.Sleep(w.Ctx(), next); err != nil {
		w.T.Fatalf("Sleep: %v", err)
	}
}

// Reboot cuts the power and boots: the session drops without DISCONNECT,
// the bbolt file is closed and opened again (a new ledger incarnation),
// and the device wakes with it.
func (w *Session) Reboot() {
	w.T.Helper()
	w.Server.Abort()
	if err := w.State.Close(); err != nil {
		w.T.Fatal(err)
	}
	w.State = mqtttest.OpenState(w.T, w.Path, w.Clock)
	w.Wake()
}

// Operator connects the operator, once, watching the device.
func (w *Session) Operator() *command.Operator {
	w.T.Helper()
	if w.op == nil {
		op, err := command.DialOperator(w.Ctx(), command.OperatorConfig{Broker: orURL(w.OperatorURL, w.Broker), Key: w.OpKey, Clock: w.Clock})
		if err != nil {
			w.T.Fatal(err)
		}
		w.T.Cleanup(func() { op.Close(context.Background()) })
		if err := op.Watch(w.Ctx(), w.Name); err != nil {
			w.T.Fatal(err)
		}
		w.op = op
	}
	return w.op
}

// Send has the operator sign and publish the command op with args under
// the next sequence number, and waits until the broker fanned it out.
func (w *Session) Send(op string, args any) command.Sent {
	w.T.Helper()
	w.Seq = command.NextSeq(w.Seq, w.Clock.Now())
	return w.SendSpec(command.Spec{Device: w.Key.DID(), Seq: w.Seq, Op: op, Args: args}, false)
}

// SendSpec is Send for a whole Spec, in CBOR when asCBOR is set.
func (w *Session) SendSpec(spec command.Spec, asCBOR bool) command.Sent {
	w.T.Helper()
	wit := w.Witness()
	s, err := w.Operator().Send(w.Ctx(), w.Name, spec, asCBOR)
	if err != nil {
		w.T.Fatal(err)
	}
	wit.Await(w.T, s.Object.ID)
	return s
}

// Witness returns the witness of the device's command topic, made at the
// first call: call it before publishing a command it must see.
func (w *Session) Witness() *mqtttest.Witness {
	if w.witness == nil {
		w.witness = mqtttest.NewWitness(w.T, w.Broker, mqtt.Topics{Device: w.Name}.Command())
	}
	return w.witness
}

// Reply waits for the device's reply to the command id.
func (w *Session) Reply(id string) command.Reply {
	w.T.Helper()
	r, _, err := w.Operator().AwaitReply(w.Ctx(), w.Name, id, w.Key.DID())
	if err != nil {
		w.T.Fatalf("waiting for the reply to %s: %v", id, err)
	}
	return r
}

// ReplyWith collects replies to id until one has outcome want.
func (w *Session) ReplyWith(id string, want command.Outcome) []command.Reply {
	w.T.Helper()
	var all []command.Reply
	for {
		r := w.Reply(id)
		if all = append(all, r); r.Outcome == want {
			return all
		}
	}
}

// DropOperator closes the operator's connection, if any, and forgets it
// and the command topic's witness (both sessions end with a broker that
// restarts): the next Operator, Send or Witness makes new ones.
func (w *Session) DropOperator() {
	if w.op != nil {
		w.op.Close(context.Background())
	}
	w.op, w.witness = nil, nil
}

// ReconnectOperator is DropOperator, then a new operator, which Operator
// returns from then on.
func (w *Session) ReconnectOperator() *command.Operator {
	w.T.Helper()
	w.DropOperator()
	return w.Operator()
}
