package relay

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

func TestBrokerRaisesMessageExpiryAndServes(t *testing.T) {
	b, err := StartBroker(BrokerConfig{Listen: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := b.MaxMessageExpiry(); got != 30*24*time.Hour {
		t.Errorf("MaxMessageExpiry = %v, want 720h (mochi's default is 24h)", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan *paho.Publish, 1)
	sub := mqttClient(t, ctx, b.Addr(), "device-1", func(p paho.PublishReceived) (bool, error) {
		got <- p.Packet
		return true, nil
	})
	if _, err := sub.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "cmd/device-1", QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	pub := mqttClient(t, ctx, b.Addr(), "operator", nil)
	expiry := uint32(48 * 3600) // longer than mochi's default cap
	if _, err := pub.Publish(ctx, &paho.Publish{Topic: "cmd/device-1", QoS: 1, Payload: []byte("wake"), Properties: &paho.PublishProperties{MessageExpiry: &expiry}}); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-got:
		if string(p.Payload) != "wake" {
			t.Errorf("payload %q", p.Payload)
		}
	case <-ctx.Done():
		t.Fatal("no message through the embedded broker")
	}
}

func mqttClient(tb testing.TB, ctx context.Context, addr, id string, onPub func(paho.PublishReceived) (bool, error)) *paho.Client {
	tb.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := paho.ClientConfig{Conn: conn, ClientID: id}
	if onPub != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){onPub}
	}
	c := paho.NewClient(cfg)
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: id, CleanStart: true, KeepAlive: 30}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Disconnect(&paho.Disconnect{}) })
	return c
}
