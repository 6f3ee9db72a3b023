package broker

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// TestBrokerKeepsPacketIDSpacesApart: a device's PUBLISH that carries the
// packet identifier of a command the broker sent it and it has not
// acknowledged yet (MQTT 5.0 Section 2.2.1: the client and the server
// assign identifiers independently) leaves the command in flight: after the
// connection drops, after a new connection takes the session over from a
// live one, and after a restart of the broker with its bolt store, the
// resumed session gets the command again with DUP set (Section 4.4), and
// the device's own flow (a QoS 2 one left at PUBREC across the takeover or
// restart) is acknowledged with its identifier. mochi v2.7.9 alone dropped
// the command (idSpaces).
func TestBrokerKeepsPacketIDSpacesApart(t *testing.T) {
	for _, qos := range []byte{1, 2} {
		for _, resume := range []string{"drop", "takeover", "restart"} {
			t.Run(fmt.Sprintf("qos%d-%s", qos, resume), func(t *testing.T) {
				testPacketIDSpaces(t, qos, resume)
			})
		}
	}
}

func testPacketIDSpaces(t *testing.T, qos byte, resume string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, cfg, op, key := startStored(t)
	defer func() { b.Close() }()
	replies := make(chan string, 4)
	opc := mustConnect(t, ctx, b, op, "operator", true, func(p paho.PublishReceived) (bool, error) {
		replies <- string(p.Packet.Payload)
		return true, nil
	})
	mustSubscribe(t, ctx, opc, "torpor/v1/device-7/reply")

	dev := dialRaw(t, ctx, b, key, "device-7", false)
	id := commandInFlight(t, ctx, opc, dev)
	// The device leaves the command unacknowledged and replies with its
	// identifier.
	dev.send(&packets.Publish{Topic: "torpor/v1/device-7/reply", QoS: qos, PacketID: id, Payload: []byte("reply"), Properties: &packets.Properties{}})
	if qos == 1 {
		dev.expect(packets.PUBACK, id)
	} else {
		dev.expect(packets.PUBREC, id)
		if resume == "drop" {
			dev.send(&packets.Pubrel{PacketID: id, Properties: &packets.Properties{}})
			dev.expect(packets.PUBCOMP, id)
		}
	}
	waitReply(t, ctx, replies)
	if resume != "takeover" {
		dev.conn.Close()
	}
	if resume == "restart" {
		b = restart(t, b, cfg)
	}
	dev = dialRaw(t, ctx, b, key, "device-7", true)
	resent, pubrec := dev.resent(id)
	if resent == nil {
		t.Fatalf("the command (packet identifier %d) was not sent again after the device published with that identifier", id)
	}
	if resent.PacketID != id || !resent.Duplicate || string(resent.Payload) != "command" {
		t.Errorf("resent %v, want the command with identifier %d and DUP set", resent, id)
	}
	dev.send(&packets.Puback{PacketID: id, Properties: &packets.Properties{}})
	if qos == 2 && resume != "drop" {
		if !pubrec {
			t.Errorf("after the %s the device's QoS 2 flow %d was not acknowledged again with PUBREC %d", resume, id, id)
		}
		dev.send(&packets.Pubrel{PacketID: id, Properties: &packets.Properties{}})
		dev.expect(packets.PUBCOMP, id)
	}
}

// TestBrokerSubscribesWithDeliveryID: a SUBSCRIBE or UNSUBSCRIBE that
// carries the packet identifier of a delivery the device has not
// acknowledged is a new packet of the client's own identifier space (MQTT
// 5.0 Section 2.2.1), answered with success under its identifier; mochi
// v2.7.9 alone answered 0x91, Packet Identifier in use (idSpaces).
func TestBrokerSubscribesWithDeliveryID(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	op, key := didtest.Key(t, 1), didtest.Key(t, 7)
	b := startBroker(t, Config{Operators: []did.DID{op.DID()}})
	opc := mustConnect(t, ctx, b, op, "operator", true, nil)
	dev := dialRaw(t, ctx, b, key, "device-7", false)
	id := commandInFlight(t, ctx, opc, dev)
	dev.send(&packets.Subscribe{PacketID: id, Properties: &packets.Properties{},
		Subscriptions: []packets.SubOptions{{Topic: "torpor/v1/device-7/sync", QoS: 1}}})
	dev.expect(packets.SUBACK, id)
	dev.send(&packets.Unsubscribe{PacketID: id, Properties: &packets.Properties{}, Topics: []string{"torpor/v1/device-7/sync"}})
	dev.expect(packets.UNSUBACK, id)
	dev.send(&packets.Puback{PacketID: id, Properties: &packets.Properties{}})
	dev.send(&packets.Pingreq{})
	dev.expect(packets.PINGRESP, 0)
}

// restart closes b and starts it again on the same address and data.
func restart(t *testing.T, b *Broker, cfg Config) *Broker {
	t.Helper()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.Listen = b.Addr()
	b, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// commandInFlight subscribes dev to its commands, has the operator send
// one and returns its packet identifier, unacknowledged.
func commandInFlight(t *testing.T, ctx context.Context, opc *paho.Client, dev *rawClient) uint16 {
	t.Helper()
	dev.send(&packets.Subscribe{PacketID: 1, Properties: &packets.Properties{},
		Subscriptions: []packets.SubOptions{{Topic: "torpor/v1/device-7/cmd", QoS: 1}}})
	dev.expect(packets.SUBACK, 1)
	if _, err := opc.Publish(ctx, &paho.Publish{Topic: "torpor/v1/device-7/cmd", QoS: 1, Payload: []byte("command")}); err != nil {
		t.Fatal(err)
	}
	pk := dev.read()
	cmd, ok := pk.Content.(*packets.Publish)
	if !ok || string(cmd.Payload) != "command" {
		t.Fatalf("got %v, want the command", pk)
	}
	return cmd.PacketID
}

// resent pings and collects what a resumed session gets before the
// PINGRESP (mochi resends the session's in-flight packets before it reads
// any): the last PUBLISH, and whether a successful PUBREC with identifier
// id came.
func (c *rawClient) resent(id uint16) (pub *packets.Publish, pubrec bool) {
	c.t.Helper()
	c.send(&packets.Pingreq{})
	for pk := c.read(); pk.Type != packets.PINGRESP; pk = c.read() {
		switch p := pk.Content.(type) {
		case *packets.Publish:
			pub = p
		case *packets.Pubrec:
			pubrec = p.PacketID == id && p.ReasonCode < 0x80
		default:
			c.t.Fatalf("resumed session: unexpected %v", pk)
		}
	}
	return pub, pubrec
}

func waitReply(t *testing.T, ctx context.Context, replies <-chan string) {
	t.Helper()
	select {
	case r := <-replies:
		if r != "reply" {
			t.Errorf("operator got %q", r)
		}
	case <-ctx.Done():
		t.Fatal("the device's reply did not reach the operator")
	}
}

// rawClient speaks MQTT 5 packet by packet, so that a test chooses every
// packet identifier and acknowledgement.
type rawClient struct {
	t    *testing.T
	conn net.Conn
}

// dialRaw connects as a device with a persistent session and checks the
// CONNACK (and whether a session was present).
func dialRaw(t *testing.T, ctx context.Context, b *Broker, key *did.PrivateKey, id string, present bool) *rawClient {
	t.Helper()
	conn, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	tok, err := bearer.Issue(key, b.URL(), time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	expiry := uint32(3600)
	c := &rawClient{t: t, conn: conn}
	c.send(&packets.Connect{ProtocolName: "MQTT", ProtocolVersion: 5, ClientID: id, KeepAlive: 30,
		UsernameFlag: true, Username: key.DID().String(), PasswordFlag: true, Password: []byte(tok),
		Properties: &packets.Properties{SessionExpiryInterval: &expiry}})
	pk := c.read()
	ack, ok := pk.Content.(*packets.Connack)
	if !ok || ack.ReasonCode != 0 || ack.SessionPresent != present {
		t.Fatalf("CONNACK: got %v, want success with session present %t", pk, present)
	}
	return c
}

func (c *rawClient) send(p packets.Packet) {
	c.t.Helper()
	if _, err := p.WriteTo(c.conn); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawClient) read() *packets.ControlPacket {
	c.t.Helper()
	pk, err := packets.ReadPacket(c.conn)
	if err != nil {
		c.t.Fatal(err)
	}
	return pk
}

// expect reads the next packet and checks its type, identifier and that
// its reason code (if any) is a success.
func (c *rawClient) expect(typ byte, id uint16) {
	c.t.Helper()
	pk := c.read()
	reason := byte(0)
	switch p := pk.Content.(type) {
	case *packets.Puback:
		reason = p.ReasonCode
	case *packets.Pubrec:
		reason = p.ReasonCode
	case *packets.Pubcomp:
		reason = p.ReasonCode
	case *packets.Suback:
		reason = p.Reasons[0]
	case *packets.Unsuback:
		reason = p.Reasons[0]
	}
	if pk.Type != typ || pk.PacketID() != id || reason >= 0x80 {
		c.t.Fatalf("got %v, want %s with packet identifier %d and a success", pk, packets.NewControlPacket(typ).PacketType(), id)
	}
}
