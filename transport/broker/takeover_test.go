package broker

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	pahopackets "github.com/eclipse/paho.golang/packets"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
)

// publishDuringTakeover publishes a command for its client while mochi
// clears the in-flight table of the client whose session a new connection
// takes over: after the clone into the new client and before the new
// client is in the client list, the window of mochi's defect 2.
type publishDuringTakeover struct {
	mqtt.HookBase
	srv   *mqtt.Server
	topic string
	once  sync.Once
	done  chan struct{}
}

func (h *publishDuringTakeover) ID() string { return "test-publish-during-takeover" }

func (h *publishDuringTakeover) Provides(b byte) bool { return b == mqtt.OnQosDropped }

func (h *publishDuringTakeover) OnQosDropped(cl *mqtt.Client, _ packets.Packet) {
	if !cl.IsTakenOver() {
		return
	}
	h.once.Do(func() {
		if err := h.srv.Publish(h.topic, []byte("two"), false, 1); err != nil {
			panic(err)
		}
		close(h.done)
	})
}

// TestBrokerTakeoverKeepsConcurrentCommands: a command published while a
// device's new connection takes its persistent session over reaches the
// device, and survives a restart of the broker until the device
// acknowledges it. mochi v2.7.9 alone stored it in the old client's table
// after the clone, where nothing sends it (takeovers).
func TestBrokerTakeoverKeepsConcurrentCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, cfg, op, key := startStored(t)
	defer func() { b.Close() }()
	const topic = "torpor/v1/device-7/cmd"
	hook := &publishDuringTakeover{srv: b.srv, topic: topic, done: make(chan struct{})}
	if err := b.srv.AddHook(hook, nil); err != nil {
		t.Fatal(err)
	}
	opc := mustConnect(t, ctx, b, op, "operator", true, nil)
	// "command" is in flight, unacknowledged, when the next connection
	// takes the session over and clears it from the old client's table,
	// where the hook publishes "two".
	commandInFlight(t, ctx, opc, dialRaw(t, ctx, b, key, "device-7", false))
	raw := dialRaw(t, ctx, b, key, "device-7", true)
	<-hook.done
	if got := raw.commands(t, 2); !got["command"] || !got["two"] {
		t.Fatalf("after the takeover the device got %v, want command and two", got)
	}
	// Unacknowledged, both are the session's across a restart.
	raw.conn.Close()
	b = restart(t, b, cfg)
	raw = dialRaw(t, ctx, b, key, "device-7", true)
	if got := raw.commands(t, 2); !got["command"] || !got["two"] {
		t.Fatalf("after a restart the device got %v, want command and two again", got)
	}
}

// commands reads PUBLISH packets, unacknowledged, until n distinct
// payloads came, and returns them.
func (c *rawClient) commands(t *testing.T, n int) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for len(got) < n {
		pk := c.read()
		p, ok := pk.Content.(*pahopackets.Publish)
		if !ok {
			t.Fatalf("got %v, want a command", pk)
		}
		got[string(bytes.Clone(p.Payload))] = true
	}
	return got
}

// startStored starts a broker with a bolt store, an operator (key 1) and a
// device key (7).
func startStored(t *testing.T) (b *Broker, cfg Config, op, dev *did.PrivateKey) {
	t.Helper()
	op, dev = didtest.Key(t, 1), didtest.Key(t, 7)
	cfg = Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Operators: []did.DID{op.DID()}}
	b, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b, cfg, op, dev
}
