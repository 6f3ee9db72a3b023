//go:build integration

package mqtt

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/test/worldtest"
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

// device is one device (manage.Server, recording Device, bbolt state) and
// one operator on a broker (worldtest.Session); Session.DeviceURL is where
// the device connects when not to the broker (a proxy).
type device struct{ *worldtest.Session }

const name = "dev-7"

func newDevice(t testing.TB, b mqtttest.Broker) *device {
	d := &device{worldtest.NewSession(t, b, name, start)}
	d.Backoff = func(n int) time.Duration { return time.Duration(n) * 100 * time.Millisecond }
	d.Logger = benchQuiet(t)
	return d
}

// drainWhile wakes the device with an operator watching, and sends it a
// drain command through the operator; the device runs during(c) for
// every command it executes before it answers. It returns what was sent
// once the device executed the drain and its reply was committed to the
// device's queue (the session may not have delivered it yet).
func (d *device) drainWhile(during func(c manage.Command)) command.Sent {
	d.T.Helper()
	d.Dev.Result = func(ctx context.Context, c manage.Command) manage.Result {
		during(c)
		return manage.OK(map[string]string{"done": c.Op})
	}
	d.Wake()
	d.Operator()
	d.Seq = command.NextSeq(d.Seq, d.Clock.Now())
	s, err := d.Operator().Send(ctxT(d.T), name, command.Spec{Device: d.Key.DID(), Seq: d.Seq, Op: command.OpDrain}, false)
	if err != nil {
		d.T.Fatal(err)
	}
	if _, err := d.Dev.WaitExecuted(ctxT(d.T), 1); err != nil {
		d.T.Fatal(err)
	}
	if err := d.Server.WaitIdle(ctxT(d.T)); err != nil {
		d.T.Fatal(err)
	}
	return s
}

// send signs and publishes a command with the next sequence number and
// waits until the broker fanned it out.
func (d *device) send(op string, args any) string {
	d.T.Helper()
	d.Seq = command.NextSeq(d.Seq, d.Clock.Now())
	return d.publish(d.OpKey, command.Spec{Device: d.Key.DID(), Seq: d.Seq, Op: op, Args: args, IssuedAt: d.Clock.Now()})
}

func (d *device) publish(k *did.PrivateKey, spec command.Spec) string {
	d.T.Helper()
	o, err := command.Sign(k, spec)
	if err != nil {
		d.T.Fatal(err)
	}
	wit := d.Witness()
	s, err := d.Operator().PublishCommand(ctxT(d.T), name, o, false)
	if err != nil {
		d.T.Fatal(err)
	}
	if s.NoSubscribers {
		d.T.Fatal("the broker has no session for the device")
	}
	wit.Await(d.T, o.ID)
	return o.ID
}

// benchQuiet is worldtest.Logger, except in benchmarks, where logging every
// message would be what they measure.
func benchQuiet(t testing.TB) *slog.Logger {
	if _, ok := t.(*testing.B); ok {
		return nil
	}
	return worldtest.Logger(t)
}
