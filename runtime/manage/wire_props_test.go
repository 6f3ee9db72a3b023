package manage_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"

	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/login"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
)

// TestWireProperties reads the packets the device and the operator really
// send, through a recording proxy in front of the embedded broker, and
// checks the MQTT 5 properties the design rests on: the device's
// persistent session (CleanStart false, Session Expiry Interval the
// configured length, longer than any sleep; MQTT 5.0 Sections 3.1.2.4 and
// 3.1.2.11.2), its will (the retained status topic, QoS 1), a command's
// Message Expiry Interval equal to its lifetime (Section 3.3.2.3.3) with
// the reply topic as Response Topic, the device's reply expiring too, and
// the clean sleep's status published retained.
func TestWireProperties(t *testing.T) {
	b := mqtttest.StartEmbedded(t, nil)
	addr := strings.TrimPrefix(b.URL(), "mqtt://")
	devProxy, opProxy := mqtttest.StartProxy(t, addr), mqtttest.StartProxy(t, addr)
	b.AddAudience(t, devProxy.URL())
	b.AddAudience(t, opProxy.URL())
	h := newHarness(t, b)
	h.DeviceURL, h.OperatorURL = devProxy.URL(), opProxy.URL()
	const sessionExpiry = 72 * time.Hour
	h.Hooks = append(h.Hooks, func(c *manage.Config) { c.Timing.SessionExpiry = sessionExpiry })
	h.Wake()

	const ttl = 90 * time.Minute
	h.Seq = command.NextSeq(h.Seq, h.Clock.Now())
	sent := h.SendSpec(command.Spec{Device: h.Key.DID(), Seq: h.Seq, Op: command.OpStatus, TTL: ttl}, false)
	if r := h.Reply(sent.Object.ID); r.Outcome != command.OutcomeOK {
		t.Fatalf("status reply: %+v", r)
	}
	h.Sleep(h.Clock.Now().Add(time.Hour))

	topics := mqtt.Topics{Device: h.Name}
	dev := wirePackets(t, devProxy)
	checkConnect(t, dev[0], h.Name, sessionExpiry, topics)
	var reply, asleep *packets.Publish
	for _, p := range dev {
		pub, ok := p.Content.(*packets.Publish)
		if !ok {
			continue
		}
		switch {
		case pub.Topic == topics.Reply() && bytes.Equal(pub.Properties.CorrelationData, []byte(sent.Object.ID)):
			reply = pub
		case pub.Topic == topics.Status() && bytes.Contains(pub.Payload, []byte(`"asleep"`)):
			asleep = pub
		}
	}
	if reply == nil || reply.QoS != 1 || reply.Properties.MessageExpiry == nil || *reply.Properties.MessageExpiry == 0 {
		t.Errorf("the device's reply: %v; want a QoS 1 PUBLISH on %s with a Message Expiry Interval", reply, topics.Reply())
	}
	if asleep == nil || !asleep.Retain || asleep.QoS != 1 {
		t.Errorf("the clean sleep's status: %v; want a retained QoS 1 PUBLISH on %s", asleep, topics.Status())
	}

	checkCommand(t, wirePackets(t, opProxy), topics, sent.Object.ID, ttl)
}

// checkConnect checks the device's CONNECT: a persistent session under its
// name, the session expiry, the retained QoS 1 will on the status topic.
func checkConnect(t *testing.T, p *packets.ControlPacket, name string, sessionExpiry time.Duration, topics mqtt.Topics) {
	t.Helper()
	c, ok := p.Content.(*packets.Connect)
	if !ok {
		t.Fatalf("the device's first packet is %T, want CONNECT", p.Content)
	}
	if c.ClientID != name || c.CleanStart {
		t.Errorf("CONNECT client id %q clean start %v; want %q, false (a persistent session)", c.ClientID, c.CleanStart, name)
	}
	if e := c.Properties.SessionExpiryInterval; e == nil || *e != uint32(sessionExpiry/time.Second) {
		t.Errorf("CONNECT Session Expiry Interval %v, want %d s", deref(e), uint32(sessionExpiry/time.Second))
	}
	if !c.WillFlag || c.WillTopic != topics.Status() || !c.WillRetain || c.WillQOS != 1 {
		t.Errorf("CONNECT will: flag %v topic %q retain %v QoS %d; want the retained status topic %q at QoS 1",
			c.WillFlag, c.WillTopic, c.WillRetain, c.WillQOS, topics.Status())
	}
	// MQTT 5.0 Section 3.1.2.11.4: the broker must not send more.
	if m := c.Properties.MaximumPacketSize; m == nil || *m != login.MaxPacketSize {
		t.Errorf("CONNECT Maximum Packet Size %v, want %d", deref(m), login.MaxPacketSize)
	}
	if !c.UsernameFlag || !strings.HasPrefix(c.Username, "did:key:") || !c.PasswordFlag || !bytes.HasPrefix(c.Password, []byte("atom.")) {
		t.Errorf("CONNECT user name %q (flag %v), password flag %v: want the DID and a DID Bearer token", c.Username, c.UsernameFlag, c.PasswordFlag)
	}
}

// checkCommand checks the operator's command PUBLISH: QoS 1, the reply
// topic as Response Topic, the id as correlation data, the lifetime as
// Message Expiry Interval.
func checkCommand(t *testing.T, op []*packets.ControlPacket, topics mqtt.Topics, id string, ttl time.Duration) {
	t.Helper()
	var cmd *packets.Publish
	for _, p := range op {
		if pub, ok := p.Content.(*packets.Publish); ok && pub.Topic == topics.Command() {
			cmd = pub
		}
	}
	switch {
	case cmd == nil:
		t.Fatalf("the operator sent no PUBLISH on %s", topics.Command())
	case cmd.QoS != 1 || cmd.Properties.ResponseTopic != topics.Reply() || !bytes.Equal(cmd.Properties.CorrelationData, []byte(id)):
		t.Errorf("command PUBLISH QoS %d response topic %q correlation %q; want 1, %q, the command id",
			cmd.QoS, cmd.Properties.ResponseTopic, cmd.Properties.CorrelationData, topics.Reply())
	case deref(cmd.Properties.MessageExpiry) != uint32(ttl/time.Second):
		t.Errorf("command Message Expiry Interval %d s, want the command's lifetime, %d s", deref(cmd.Properties.MessageExpiry), uint32(ttl/time.Second))
	}
}

// wirePackets parses the bytes the first connection through p sent.
func wirePackets(t *testing.T, p *mqtttest.Proxy) []*packets.ControlPacket {
	t.Helper()
	sent := p.Sent()
	if len(sent) == 0 {
		t.Fatal("nothing went through the proxy")
	}
	r := bytes.NewReader(sent[0])
	var out []*packets.ControlPacket
	for {
		cp, err := packets.ReadPacket(r)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("parsing what went on the wire after %d packets: %v", len(out), err)
		}
		out = append(out, cp)
	}
}

func deref(p *uint32) uint32 {
	if p == nil {
		return 0
	}
	return *p
}
