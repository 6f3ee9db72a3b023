//go:build integration

package mqttsec

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/broker"
)

// TestEmbeddedBrokerRefusesStrangers: with a real device connected and
// sleeping-style persistent session, the embedded broker refuses an
// anonymous client, one with made-up credentials, and another DID using
// the device's client id with Clean Start 0 (the session hijack that
// took a queued halt), while an operator's command still reaches the
// device.
func TestEmbeddedBrokerRefusesStrangers(t *testing.T) {
	op, devKey, thief := didtest.New(t), didtest.New(t), didtest.New(t)
	b, err := broker.Start(broker.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Operators: []did.DID{op.DID()}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	startDevice(t, b.URL(), "dev-a", devKey, op.DID(), filepath.Join(t.TempDir(), "agent.db"))
	expiry := uint32(3600)
	resume := func() *paho.Connect {
		return &paho.Connect{ClientID: "dev-a", KeepAlive: 30, Properties: &paho.ConnectProperties{SessionExpiryInterval: &expiry}}
	}
	for name, cp := range map[string]*paho.Connect{
		"anonymous":             resume(),
		"made-up credentials":   {ClientID: "x-1", CleanStart: true, KeepAlive: 30, Username: devKey.DID().String(), UsernameFlag: true, Password: []byte("secret"), PasswordFlag: true},
		"another's client id":   withToken(t, resume(), thief, b.URL()),
		"operator as device id": withToken(t, resume(), op, b.URL()),
	} {
		if _, err := rawConnect(t, b.Addr(), cp); err == nil {
			t.Errorf("%s: connected, want refused", name)
		}
	}
}

// TestOversizedCommandNeverReachesTheStore: a 5 MiB command is refused by
// the embedded broker; the device's store file does not grow and the
// device still takes the next command.
func TestOversizedCommandNeverReachesTheStore(t *testing.T) {
	op, devKey := didtest.New(t), didtest.New(t)
	b, err := broker.Start(broker.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Operators: []did.DID{op.DID()}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	path := filepath.Join(t.TempDir(), "agent.db")
	startDevice(t, b.URL(), "dev-a", devKey, op.DID(), path)
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rawConnect(t, b.Addr(), withToken(t, &paho.Connect{ClientID: "torporctl-1", CleanStart: true, KeepAlive: 30}, op, b.URL()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for range 3 {
		if _, err := c.Publish(ctx, &paho.Publish{Topic: "torpor/v1/dev-a/cmd", QoS: 1, Payload: bytes.Repeat([]byte("{"), 5<<20)}); err == nil {
			t.Fatal("the broker acknowledged a 5 MiB command")
		}
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() > before.Size() {
		t.Errorf("the device's store grew from %d to %d bytes", before.Size(), after.Size())
	}
	out, stderr, err := ctl(t, []string{"TORPOR_KNOWN_DEVICES=" + filepath.Join(t.TempDir(), "known")},
		"device", "status", "--broker", b.URL(), "--key", testenv.KeyFile(t, op), "--did", devKey.DID().String(), "dev-a")
	if err != nil || !strings.Contains(out, "  ok") {
		t.Errorf("status after the oversized commands: %v\n%s%s", err, out, stderr)
	}
}
