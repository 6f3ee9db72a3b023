//go:build integration

package tenants

import (
	"context"
	"net"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/bearer"
)

var mqttRE = regexp.MustCompile(`msg="torpor-relay listening" .*mqtt=(mqtt://\S+)`)

// mqttConnect connects to the relay's embedded broker as key with client
// id, as a Torpor client does (user name the DID, password a DID Bearer
// token for the broker's URL); onPub, if set, receives what arrives.
func mqttConnect(t *testing.T, ctx context.Context, broker string, key *did.PrivateKey, id string, onPub func(paho.PublishReceived) (bool, error)) *paho.Client {
	t.Helper()
	u, err := url.Parse(broker)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := bearer.Issue(key, broker, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cfg := paho.ClientConfig{Conn: conn, ClientID: id}
	if onPub != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){onPub}
	}
	c := paho.NewClient(cfg)
	cp := &paho.Connect{ClientID: id, CleanStart: true, KeepAlive: 30, Username: key.DID().String(), UsernameFlag: true, Password: []byte(tok), PasswordFlag: true}
	if _, err := c.Connect(ctx, cp); err != nil {
		conn.Close()
		t.Fatalf("MQTT connect as %s: %v", id, err)
	}
	t.Cleanup(func() { c.Disconnect(&paho.Disconnect{}) })
	return c
}

// TestTenantsMQTTScoped: on the relay's embedded broker, each tenant's
// operator (named in its owner's list, uploaded with torporctl)
// publishes a command on its own tenant's device's topic, which the
// device receives, and is refused on the other tenant's device's command
// and status topics; the host's operator (--operator) is refused on both
// tenants' devices' topics.
func TestTenantsMQTTScoped(t *testing.T) {
	w := newWorld(t)
	broker := w.relay.Wait(t, mqttRE)[1]
	devs := map[string]*did.PrivateKey{"dev-a": w.enrol(t, "ownerA"), "dev-b": w.enrol(t, "ownerB")}
	w.relay.Next(t, 2, "agent admitted by its owner's enrolment")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[string]chan string{}
	for name, k := range devs {
		ch := make(chan string, 4)
		got[name] = ch
		c := mqttConnect(t, ctx, broker, k, name, func(p paho.PublishReceived) (bool, error) {
			ch <- string(p.Packet.Payload)
			return true, nil
		})
		if _, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "torpor/v1/" + name + "/cmd", QoS: 1}}}); err != nil {
			t.Fatalf("%s subscribes to its commands: %v", name, err)
		}
	}
	for op, own := range map[string]string{"opA": "dev-a", "opB": "dev-b"} {
		other := map[string]string{"dev-a": "dev-b", "dev-b": "dev-a"}[own]
		c := mqttConnect(t, ctx, broker, w.keys[op], op, nil)
		if _, err := c.Publish(ctx, &paho.Publish{Topic: "torpor/v1/" + own + "/cmd", QoS: 1, Payload: []byte("from " + op)}); err != nil {
			t.Errorf("%s's command to its tenant's %s: %v", op, own, err)
		} else if p := <-got[own]; p != "from "+op {
			t.Errorf("%s received %q, want %s's command", own, p, op)
		}
		checkRefused(t, ctx, c, op, other)
	}
	host := mqttConnect(t, ctx, broker, w.keys["host"], "host", nil)
	for name := range devs {
		checkRefused(t, ctx, host, "the host", name)
	}
}

// checkRefused: who may neither publish on dev's command topic nor
// subscribe to its status.
func checkRefused(t *testing.T, ctx context.Context, c *paho.Client, who, dev string) {
	t.Helper()
	if _, err := c.Publish(ctx, &paho.Publish{Topic: "torpor/v1/" + dev + "/cmd", QoS: 1, Payload: []byte("halt")}); err == nil {
		t.Errorf("%s published a command on %s's topic", who, dev)
	}
	if _, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "torpor/v1/" + dev + "/status", QoS: 1}}}); err == nil {
		t.Errorf("%s subscribed to %s's status", who, dev)
	}
}
