package mqtt

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store"
)

// TestStatusExpires: a status is believed only within its lifetime:
// awake for StatusAwakeTTL, asleep until the announced wake plus
// StatusGrace.
func TestStatusExpires(t *testing.T) {
	key := didtest.Key(t, 1)
	wake := t0.Add(3 * time.Hour)
	for _, tc := range []struct {
		st    Status
		valid time.Duration // how long after t0 it is still believed
	}{
		{Status{State: StateAwake}, StatusAwakeTTL},
		{Status{State: StateAsleep, NextWake: &wake}, 3*time.Hour + StatusGrace},
		{Status{State: StateStopped}, MaxStatusTTL},
	} {
		tc.st.Device, tc.st.Name = key.DID().String(), "dev-1"
		o, err := signStatus(key, t0, tc.st)
		if err != nil {
			t.Fatal(err)
		}
		j, _ := o.MarshalJSON()
		if _, _, err := VerifyStatus(ContentTypeJSON, j, key.DID(), t0.Add(tc.valid)); err != nil {
			t.Errorf("%s status at the end of its lifetime: %v", tc.st.State, err)
		}
		if _, _, err := VerifyStatus(ContentTypeJSON, j, key.DID(), t0.Add(tc.valid+time.Second)); !errors.Is(err, ErrExpired) {
			t.Errorf("%s status after its lifetime: %v, want ErrExpired", tc.st.State, err)
		}
	}
}

// TestOversizedCommandNeverStored: a command over MaxPayload is dropped
// before it reaches the inbox: the store file does not grow.
func TestOversizedCommandNeverStored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	db, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := newClient(Config{Broker: "mqtt://127.0.0.1:1", Name: "dev-1", Key: didtest.Key(t, 2), DB: db, Handler: &countingHandler{db: db}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.cancel()
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
