//go:build integration

package mqtt

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/store/mqttsession"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
)

func startMosquitto(t testing.TB) *mqtttest.Mosquitto {
	bin, err := mqtttest.FindMosquitto()
	if err != nil {
		testenv.Unavailable(t, err.Error())
	}
	return mqtttest.StartMosquitto(t, bin)
}

// TestRebootResendsFromTheBboltSession: the device's reply is written to
// a broker that stopped answering (mosquitto paused: the bytes sit in its
// socket, no PUBACK comes), the power goes, and after the reboot the
// client's half of the MQTT session, read back from bbolt, resends the
// reply under its packet identifier (MQTT 5.0 Section 4.4) until the
// broker acknowledges it.
func TestRebootResendsFromTheBboltSession(t *testing.T) {
	m := startMosquitto(t)
	d := newDevice(t, m)
	// The reply is committed to the queue before the command is
	// acknowledged (drainWhile's WaitIdle), then handed to the session
	// (QueueDrained).
	s := d.drainWhile(func(c manage.Command) {
		if c.Op == command.OpDrain {
			m.Pause(t)
		}
	})
	select {
	case <-d.Server.QueueDrained():
	case <-ctxT(t).Done():
		t.Fatal("the reply never left the queue")
	}
	if n, err := d.Server.Unacked(); err != nil || n == 0 {
		t.Fatalf("Unacked() = %d, %v; want the reply waiting for its PUBACK", n, err)
	}
	d.Server.Abort()
	d.State.Close()
	m.Resume(t)

	d.State = mqtttest.OpenState(t, d.Path, d.Clock)
	store, err := mqttsession.OpenStore(d.State.DB, "mqtt-session-client")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := store.List()
	if err != nil || len(ids) == 0 {
		t.Fatalf("after the reboot the bbolt session holds %v, %v; want the unacknowledged reply", ids, err)
	}
	d.Wake()
	rs := d.ReplyWith(s.Object.ID, command.OutcomeOK)
	if string(rs[len(rs)-1].Result) != `{"done":"drain"}` {
		t.Errorf("replies %+v", rs)
	}
	// Sleep waits until the broker acknowledged everything: the packets
	// resent from bbolt were acknowledged on the new connection.
	d.Sleep(time.Time{})
	if ids, err := store.List(); err != nil || len(ids) != 0 {
		t.Errorf("after the clean sleep the session still holds %v, %v", ids, err)
	}
}

// TestBrokerRestartKeepsQueuedCommands: mosquitto (persistence on) is
// restarted while the device sleeps; the command queued in its session
// survives and runs at the wake. (The embedded broker loses in-flight
// packet identifiers across a restart: see docs/mqtt.md.)
func TestBrokerRestartKeepsQueuedCommands(t *testing.T) {
	m := startMosquitto(t)
	d := newDevice(t, m)
	d.Wake()
	d.Sleep(start.Add(time.Hour))
	id := d.send(command.OpResume, &command.NoteArgs{Note: "after the restart"})
	m.Restart(t)
	d.ReconnectOperator() // a fresh operator session after the restart
	d.Clock.Advance(time.Hour)
	d.Wake()
	if r := d.Reply(id); r.Outcome != command.OutcomeOK {
		t.Fatalf("reply = %+v", r)
	}
}

// TestBrokerKilledMidSessionResubscribes: mosquitto is killed (SIGKILL)
// while the device answers a command, so the broker forgets the device's
// session and subscription, and the reply, committed to bbolt, has not
// reached it. Once mosquitto is back (and an operator watches), the
// device's connection manager reconnects, the client subscribes again on
// the new session, the reply goes out from bbolt, and a command sent after
// the crash reaches the device: without the new subscription the broker
// would have no one to deliver it to.
func TestBrokerKilledMidSessionResubscribes(t *testing.T) {
	m := startMosquitto(t)
	d := newDevice(t, m)
	px := mqtttest.StartProxy(t, strings.TrimPrefix(m.URL(), "mqtt://"))
	d.DeviceURL = px.URL()
	s := d.drainWhile(func(c manage.Command) {
		if c.Op == command.OpDrain {
			px.Cut() // the device's attempts fail until Restore
			m.Kill(t)
		}
	})
	m.Restart(t)
	d.ReconnectOperator() // watches the device's replies on the new broker
	px.Restore()
	awaitConnects(t, d, 2)
	if rs := d.ReplyWith(s.Object.ID, command.OutcomeOK); string(rs[len(rs)-1].Result) != `{"done":"drain"}` {
		t.Errorf("replies %+v", rs)
	}
	id := d.send(command.OpResume, &command.NoteArgs{Note: "after the crash"})
	if r := d.Reply(id); r.Outcome != command.OutcomeOK {
		t.Fatalf("reply = %+v", r)
	}
	d.Sleep(time.Time{})
	if n, err := d.Server.Unacked(); err != nil || n != 0 {
		t.Errorf("after the clean sleep %d publications are unacknowledged (%v)", n, err)
	}
}

// awaitConnects waits until the device's client has made n connections and
// is ready on the last.
func awaitConnects(t *testing.T, d *device, n int) {
	t.Helper()
	ctx := ctxT(t)
	for d.Server.Connects() < n {
		if ctx.Err() != nil {
			t.Fatalf("the client made %d connections, want %d", d.Server.Connects(), n)
		}
		runtime.Gosched()
	}
	if err := d.Server.AwaitConnection(ctx); err != nil {
		t.Fatal(err)
	}
}
