package mqtttest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/mqtt/login"
)

// Witness is a second subscriber to a device's command topic. mochi
// acknowledges a publication to its publisher before it fans the message
// out to subscribers, and a message fanned out to a persistent session
// while a reconnecting client takes that session over is lost (see
// docs/mqtt.md). A test that publishes a command and at once wakes the
// device waits until the witness has the command, so that the fan-out is
// done, as it would be in practice, where minutes pass in between.
type Witness struct {
	mu   sync.Mutex
	seen map[string]bool // correlation data (the command id) seen
	ch   chan struct{}
}

// NewWitness subscribes to topic on b until the end of the test. It
// authenticates with a key of its own, which an Embedded broker accepts
// as an observer; other brokers must allow it themselves.
func NewWitness(t testing.TB, b Broker, topic string) *Witness {
	t.Helper()
	w := &Witness{seen: map[string]bool{}, ch: make(chan struct{}, 1)}
	key, err := did.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := b.(*Embedded); ok {
		e.AddObserver(key.DID())
	}
	u, err := url.Parse(b.URL())
	if err != nil {
		t.Fatal(err)
	}
	var id [6]byte
	rand.Read(id[:])
	cm, err := autopaho.NewConnection(context.Background(), autopaho.ClientConfig{
		ServerUrls: []*url.URL{u}, KeepAlive: 30, CleanStartOnInitialConnection: true,
		ConnectPacketBuilder: func(cp *paho.Connect, _ *url.URL) (*paho.Connect, error) {
			return cp, login.Authenticate(cp, key, b.URL(), time.Now(), nil)
		},
		ClientConfig: paho.ClientConfig{ClientID: "witness-" + hex.EncodeToString(id[:]),
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){w.received}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cm.Disconnect(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cm.AwaitConnection(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: topic, QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *Witness) received(pr paho.PublishReceived) (bool, error) {
	if pr.Packet.Properties == nil {
		return true, nil
	}
	w.mu.Lock()
	w.seen[string(pr.Packet.Properties.CorrelationData)] = true
	w.mu.Unlock()
	select {
	case w.ch <- struct{}{}:
	default:
	}
	return true, nil
}

// Await waits until the witness has seen the command with id (its MQTT
// correlation data).
func (w *Witness) Await(t testing.TB, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		w.mu.Lock()
		ok := w.seen[id]
		w.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-w.ch:
		case <-ctx.Done():
			t.Fatalf("the witness never saw command %s", id)
		}
	}
}
