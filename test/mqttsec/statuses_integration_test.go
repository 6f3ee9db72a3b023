//go:build integration

package mqttsec

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	mq "github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
)

// laxBroker is mosquitto with allow_anonymous: a broker that authenticates
// nobody, where anyone may publish a retained status on any topic.
// torporctl's own checks are all that stands.
func laxBroker(t *testing.T) *mqtttest.Mosquitto {
	bin, err := mqtttest.FindMosquitto()
	if err != nil {
		testenv.Unavailable(t, err.Error())
	}
	return mqtttest.StartMosquitto(t, bin)
}

// publishRetained publishes payload as the retained status of device
// name, anonymously.
func publishRetained(t *testing.T, m *mqtttest.Mosquitto, name string, payload []byte) {
	t.Helper()
	addr := strings.TrimPrefix(m.URL(), "mqtt://")
	c, err := rawConnect(t, addr, &paho.Connect{ClientID: "attacker", CleanStart: true, KeepAlive: 30})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Publish(ctxT(t), &paho.Publish{Topic: mq.Topics{Device: name}.Status(), QoS: 1, Retain: true, Payload: payload,
		Properties: &paho.PublishProperties{ContentType: envelope.ContentTypeJSON}})
	if err != nil {
		t.Fatal(err)
	}
}

// TestForgedAndCopiedStatusesAreRefused replays the findings on a broker
// that authenticates nobody: an attacker's self-signed status on a pinned
// device's topic makes halt fail naming both DIDs (it signed the halt for
// the attacker before); on first contact a halt is not sent to the DID of
// a status at all; device B's genuine status copied onto A's topic is
// refused (halt A went to B before).
func TestForgedAndCopiedStatusesAreRefused(t *testing.T) {
	m := laxBroker(t)
	op, devA, devB, attacker := didtest.New(t), didtest.New(t), didtest.New(t), didtest.New(t)
	startDevice(t, m.URL(), "dev-a", devA, op.DID(), filepath.Join(t.TempDir(), "a.db"))
	known := filepath.Join(t.TempDir(), "known_devices")
	env := []string{"TORPOR_BROKER=" + m.URL(), "TORPOR_KEY=" + testenv.KeyFile(t, op), "TORPOR_KNOWN_DEVICES=" + known}
	if out, stderr, err := ctl(t, env, "device", "status", "dev-a"); err != nil || !strings.Contains(stderr, "pinned dev-a to "+devA.DID().String()) {
		t.Fatalf("first contact: %v\n%s%s", err, out, stderr)
	}

	forged := envelope.Status{Device: attacker.DID().String(), Name: "dev-a", State: envelope.StateAwake, Since: time.Now().UTC()}
	publishRetained(t, m, "dev-a", signStatus(t, attacker, forged, time.Now(), time.Hour))
	out, stderr, err := ctl(t, env, "device", "halt", "--wait", "2s", "dev-a")
	if err == nil || !strings.Contains(stderr, "two DIDs claim the device name dev-a: "+devA.DID().String()) || !strings.Contains(stderr, attacker.DID().String()) {
		t.Errorf("halt with a forged status on a pinned name: %v\n%s%s", err, out, stderr)
	}
	fresh := append(env[:2:2], "TORPOR_KNOWN_DEVICES="+filepath.Join(t.TempDir(), "none"))
	out, stderr, err = ctl(t, fresh, "device", "halt", "--wait", "2s", "dev-a")
	if err == nil || !strings.Contains(stderr, "not pinned") || strings.Contains(out, "ok") {
		t.Errorf("halt on first contact with a forged status: %v\n%s%s", err, out, stderr)
	}

	copied := envelope.Status{Device: devB.DID().String(), Name: "dev-b", State: envelope.StateAwake, Since: time.Now().UTC()}
	publishRetained(t, m, "dev-a", signStatus(t, devB, copied, time.Now(), time.Hour))
	out, stderr, err = ctl(t, fresh, "device", "status", "--wait", "2s", "dev-a")
	if err == nil || !strings.Contains(stderr, "copied from another device's topic") {
		t.Errorf("status with B's status on A's topic: %v\n%s%s", err, out, stderr)
	}
}

// TestExpiredStatusIsNotBelieved: a genuine status past its lifetime is
// not used, neither for the device's DID nor as the answer to status.
func TestExpiredStatusIsNotBelieved(t *testing.T) {
	m := laxBroker(t)
	op, dev := didtest.New(t), didtest.New(t)
	wake := time.Now().Add(-time.Hour).UTC()
	old := envelope.Status{Device: dev.DID().String(), Name: "dev-x", State: envelope.StateAsleep, Since: wake.Add(-time.Hour), NextWake: &wake}
	publishRetained(t, m, "dev-x", signStatus(t, dev, old, wake.Add(-time.Hour), time.Hour+envelope.StatusGrace))
	env := []string{"TORPOR_BROKER=" + m.URL(), "TORPOR_KEY=" + testenv.KeyFile(t, op), "TORPOR_KNOWN_DEVICES=" + filepath.Join(t.TempDir(), "k")}
	out, stderr, err := ctl(t, env, "device", "status", "--wait", "1s", "dev-x")
	if err == nil || !strings.Contains(stderr, "expired") || strings.Contains(out, "asleep") {
		t.Errorf("status from an expired retained status: %v\n%s%s", err, out, stderr)
	}
	out, _, _ = ctl(t, env, "device", "status", "--wait", "1s", "--did", dev.DID().String(), "dev-x")
	if strings.Contains(out, "answered from its retained status") {
		t.Errorf("an expired status answered status:\n%s", out)
	}
}
