package mqtt

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/transport/broker"
)

// TestRotatedKeyReconnectsWithHandover: the embedded broker pinned the
// device's name to its first DID; after a key rotation, the client started
// again with the new key (a restart) presents the recorded handover and
// connects under the same name.
func TestRotatedKeyReconnectsWithHandover(t *testing.T) {
	b, err := broker.Start(broker.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	db, err := store.Open(filepath.Join(t.TempDir(), "agent.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	old, next := didtest.Key(t, 1), didtest.Key(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := func() *Client {
		c, err := Start(Config{Broker: b.URL(), Name: "dev-r", Key: old, DB: db, Handler: &countingHandler{db: db},
			Timing: Timing{Backoff: func(int) time.Duration { return 50 * time.Millisecond }}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := start()
	if err := c.AwaitConnection(ctx); err != nil {
		t.Fatal(err)
	}
	o, err := governed.Sign(old, governed.Template{IssuedAt: time.Now(), Purpose: broker.HandoverPurpose,
		Semantic: governed.Semantic{Schema: "https://torpor.dev/schemas/key-handover/v1"},
		Payload:  map[string]string{"old": old.DID().String(), "new": next.DID().String(), "device": "dev-r"}})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := o.MarshalJSON()
	if err := c.SetHandover(h); err != nil {
		t.Fatal(err)
	}
	c.Abort()

	old = next // the restart loads the new key
	c = start()
	defer c.Abort()
	if err := c.AwaitConnection(ctx); err != nil {
		t.Fatalf("the rotated key did not connect under its name: %v", err)
	}
}
