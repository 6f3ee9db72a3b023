//go:build integration

package mqtt

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/manage/managetest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	mq "github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
)

// start is the fake clocks' first instant.
var start = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

// broker is a broker a scenario runs against.
type broker struct {
	name  string
	start func(t testing.TB) mqtttest.Broker
}

// brokers are mosquitto (the Debian package; required under
// TORPOR_REQUIRE_TOOLS=1) and the embedded mochi broker.
var brokers = []broker{
	{"mosquitto", func(t testing.TB) mqtttest.Broker {
		bin, err := mqtttest.FindMosquitto()
		if err != nil {
			testenv.Unavailable(t, err.Error())
		}
		return mqtttest.StartMosquitto(t, bin)
	}},
	{"embedded", func(t testing.TB) mqtttest.Broker { return mqtttest.StartEmbedded(t, nil) }},
}

// forEachBroker runs f as a subtest per broker.
func forEachBroker(t *testing.T, f func(t *testing.T, b mqtttest.Broker)) {
	for _, b := range brokers {
		t.Run(b.name, func(t *testing.T) { f(t, b.start(t)) })
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustKey(t testing.TB) *did.PrivateKey {
	t.Helper()
	k, err := did.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

type tlog struct{ t testing.TB }

func (l tlog) Write(p []byte) (int, error) { l.t.Log(string(p)); return len(p), nil }

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// device is one device (manage.Server, recording Device, bbolt state) and
// one operator on a broker.
type device struct {
	t       testing.TB
	broker  mqtttest.Broker
	url     string // where the device connects (the broker, or a proxy)
	clk     *clocktest.Clock
	dev     *managetest.Device
	key     *did.PrivateKey
	opKey   *did.PrivateKey
	path    string
	state   *mqtttest.State
	client  *manage.Server
	op      *command.Operator
	witness *mqtttest.Witness
	seq     uint64
}

const name = "dev-7"

func newDevice(t testing.TB, b mqtttest.Broker) *device {
	d := &device{t: t, broker: b, url: b.URL(), clk: clocktest.New(start), dev: &managetest.Device{},
		key: mustKey(t), opKey: mustKey(t), path: filepath.Join(t.TempDir(), "agent.db")}
	d.state = mqtttest.OpenState(t, d.path, d.clk)
	if e, ok := b.(*mqtttest.Embedded); ok {
		e.AddOperator(d.opKey.DID())
	}
	return d
}

func (d *device) wake() {
	d.t.Helper()
	c, err := manage.Start(manage.Config{Config: mq.Config{Broker: d.url, Name: name, Key: d.key, DB: d.state.DB, Timing: mq.Timing{Backoff: func(n int) time.Duration { return time.Duration(n) * 100 * time.Millisecond }}, Clock: d.clk, Logger: benchQuiet(d.t)}, Operators: []did.DID{d.opKey.DID()}, Replay: d.state.Replay, Ledger: d.state.Ledger, Device: d.dev})
	if err != nil {
		d.t.Fatal(err)
	}
	d.client = c
	d.t.Cleanup(func() {
		select {
		case <-c.Done():
		default:
			c.Abort()
		}
	})
	if err := c.AwaitConnection(ctxT(d.t)); err != nil {
		d.t.Fatal(err)
	}
}

func (d *device) sleep(next time.Time) {
	d.t.Helper()
	if err := d.client.Sleep(ctxT(d.t), next); err != nil {
		d.t.Fatal(err)
	}
}

// reboot cuts the power: no DISCONNECT, bbolt closed and opened again.
func (d *device) reboot() {
	d.t.Helper()
	d.client.Abort()
	if err := d.state.Close(); err != nil {
		d.t.Fatal(err)
	}
	d.state = mqtttest.OpenState(d.t, d.path, d.clk)
	d.wake()
}

func (d *device) operator() *command.Operator {
	d.t.Helper()
	if d.op == nil {
		op, err := command.DialOperator(ctxT(d.t), command.OperatorConfig{Broker: d.broker.URL(), Key: d.opKey, Clock: d.clk})
		if err != nil {
			d.t.Fatal(err)
		}
		d.t.Cleanup(func() { op.Close(context.Background()) })
		if err := op.Watch(ctxT(d.t), name); err != nil {
			d.t.Fatal(err)
		}
		d.op = op
	}
	return d.op
}

// drainWhile wakes the device with an operator watching, and sends it a
// drain command through the operator; the device runs during(c) for
// every command it executes before it answers. It returns what was sent
// once the device executed the drain and its reply was committed to the
// device's queue (the session may not have delivered it yet).
func (d *device) drainWhile(during func(c manage.Command)) command.Sent {
	d.t.Helper()
	d.dev.Result = func(ctx context.Context, c manage.Command) manage.Result {
		during(c)
		return manage.OK(map[string]string{"done": c.Op})
	}
	d.wake()
	d.operator()
	d.seq = command.NextSeq(d.seq, d.clk.Now())
	s, err := d.op.Send(ctxT(d.t), name, command.Spec{Device: d.key.DID(), Seq: d.seq, Op: command.OpDrain}, false)
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := d.dev.WaitExecuted(ctxT(d.t), 1); err != nil {
		d.t.Fatal(err)
	}
	if err := d.client.WaitIdle(ctxT(d.t)); err != nil {
		d.t.Fatal(err)
	}
	return s
}

// send signs and publishes a command with the next sequence number and
// waits until the broker fanned it out.
func (d *device) send(op string, args any) string {
	d.t.Helper()
	d.seq = command.NextSeq(d.seq, d.clk.Now())
	return d.publish(d.opKey, command.Spec{Device: d.key.DID(), Seq: d.seq, Op: op, Args: args, IssuedAt: d.clk.Now()})
}

func (d *device) publish(k *did.PrivateKey, spec command.Spec) string {
	d.t.Helper()
	o, err := command.Sign(k, spec)
	if err != nil {
		d.t.Fatal(err)
	}
	if d.witness == nil {
		d.witness = mqtttest.NewWitness(d.t, d.broker, mq.Topics{Device: name}.Command())
	}
	s, err := d.operator().PublishCommand(ctxT(d.t), name, o, false)
	if err != nil {
		d.t.Fatal(err)
	}
	if s.NoSubscribers {
		d.t.Fatal("the broker has no session for the device")
	}
	d.witness.Await(d.t, o.ID)
	return o.ID
}

func (d *device) reply(id string) command.Reply {
	d.t.Helper()
	r, _, err := d.operator().AwaitReply(ctxT(d.t), name, id, d.key.DID())
	if err != nil {
		d.t.Fatalf("reply to %s: %v", id, err)
	}
	return r
}

// replyWith collects replies to id until one has outcome want.
func (d *device) replyWith(id string, want command.Outcome) []command.Reply {
	d.t.Helper()
	var all []command.Reply
	for {
		r := d.reply(id)
		if all = append(all, r); r.Outcome == want {
			return all
		}
	}
}

// benchQuiet is testLogger, except in benchmarks, where logging every
// message would be what they measure.
func benchQuiet(t testing.TB) *slog.Logger {
	if _, ok := t.(*testing.B); ok {
		return nil
	}
	return testLogger(t)
}
