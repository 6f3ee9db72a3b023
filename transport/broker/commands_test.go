package broker

import (
	"context"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
)

// TestOnCommand: the observer of Config.OnCommand, there from the
// broker's start, gets every command an operator published on a device's
// cmd topic, with the DID the connection proved, the device's name, the
// content type and the payload; a device's own publishes are not
// commands. (torpor-relay set its observer with ObserveCommands after
// Start returned, when the broker already listened.)
func TestOnCommand(t *testing.T) {
	op, dev := didtest.Key(t, 1), didtest.Key(t, 2)
	got := make(chan Command, 4)
	b := startBroker(t, Config{Operators: []did.DID{op.DID()}, OnCommand: func(c Command) { got <- c }})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := mustConnect(t, ctx, b, dev, "device-1", true, nil)
	pub := mustConnect(t, ctx, b, op, "operator", true, nil)
	send := func(c *paho.Client, topic, payload string) {
		t.Helper()
		p := &paho.Publish{Topic: topic, QoS: 1, Payload: []byte(payload), Properties: &paho.PublishProperties{ContentType: "application/json"}}
		if _, err := c.Publish(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	send(d, "torpor/v1/device-1/status", "status")
	send(pub, "torpor/v1/device-1/cmd", "one")
	send(d, "torpor/v1/device-1/event", "event")
	send(pub, "torpor/v1/device-1/cmd", "two")
	for _, want := range []string{"one", "two"} {
		select {
		case c := <-got:
			if c.Operator != op.DID() || c.Device != "device-1" || c.ContentType != "application/json" || string(c.Payload) != want {
				t.Errorf("observer got %+v, want %s's %q on device-1", c, op.DID(), want)
			}
		case <-ctx.Done():
			t.Fatalf("observer never got %q", want)
		}
	}
}
