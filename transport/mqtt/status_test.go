package mqtt

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
)

// TestOversizedCommandNeverStored: a command over envelope.MaxPayload is dropped
// before it reaches the inbox: the store file does not grow.
func TestOversizedCommandNeverStored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	c := unconnectedClient(t, path)
	before, _ := os.Stat(path)
	big := bytes.Repeat([]byte("x"), 5<<20)
	for range 3 {
		if d := c.receive([]inbound{{pub: &paho.Publish{Topic: c.topics.Command(), QoS: 1, Payload: big}}}); len(d) != 0 {
			t.Errorf("receive returned %d deliveries for a 5 MiB command", len(d))
		}
	}
	if left, err := c.loadInbox(); err != nil || len(left) != 0 {
		t.Errorf("inbox holds %d commands (%v), want none", len(left), err)
	}
	after, _ := os.Stat(path)
	if after.Size() > before.Size() {
		t.Errorf("the store grew from %d to %d bytes", before.Size(), after.Size())
	}
}

// TestRetainedCommandNeverStored: a command delivered as retained is
// acknowledged and dropped before it reaches the inbox.
func TestRetainedCommandNeverStored(t *testing.T) {
	c := unconnectedClient(t, filepath.Join(t.TempDir(), "agent.db"))
	retained := &paho.Publish{Topic: c.topics.Command(), QoS: 1, Retain: true, Payload: []byte(`{"a":1}`)}
	if d := c.receive([]inbound{{pub: retained}}); len(d) != 0 {
		t.Errorf("receive returned %d deliveries for a retained command", len(d))
	}
	if left, err := c.loadInbox(); err != nil || len(left) != 0 {
		t.Errorf("inbox holds %d commands (%v), want none", len(left), err)
	}
}

// unconnectedClient is a device's client on a store at path, never
// connected, whose receive path a test drives.
func unconnectedClient(t *testing.T, path string) *Client {
	t.Helper()
	db, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c, err := newClient(Config{Broker: "mqtt://127.0.0.1:1", Name: "dev-1", Key: didtest.Key(t, 2), DB: db, Handler: &countingHandler{db: db}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.cancel)
	return c
}

// TestStatusOutlivesNoSession: a status that stays true until the device is
// heard from again lives as long as the broker keeps its session.
func TestStatusOutlivesNoSession(t *testing.T) {
	if envelope.MaxStatusTTL != DefaultSessionExpiry {
		t.Errorf("envelope.MaxStatusTTL = %v, DefaultSessionExpiry = %v: want them equal", envelope.MaxStatusTTL, DefaultSessionExpiry)
	}
}
