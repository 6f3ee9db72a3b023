//go:build integration

package mqttsec

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/mqtt/login"
)

// TestMosquittoACL: torporctl mqtt acl writes a configuration with which
// the real mosquitto admits the fleet's device and operator (with their
// generated passwords) and refuses an anonymous client, a made-up
// password, another client's password, and a device subscribing to
// another device's commands.
func TestMosquittoACL(t *testing.T) {
	f := startMosquittoFleet(t, false)
	op, devA, devB := f.op, f.devA, f.devB
	startDevice(t, f.m.URL(), "dev-a", devA, op.DID(), filepath.Join(t.TempDir(), "a.db"), f.secret(t, "device-dev-a")...)
	o, e, err := ctl(t, []string{"TORPOR_KNOWN_DEVICES=" + filepath.Join(t.TempDir(), "known")}, "device", "status", "--broker", f.m.URL(),
		"--key", testenv.KeyFile(t, op), "--mqtt-password-file", f.opSecretFile(), "--did", devA.DID().String(), "dev-a")
	if err != nil || !strings.Contains(o, "  ok") {
		t.Fatalf("the operator's status command through mosquitto: %v\n%s%s", err, o, e)
	}
	for name, cp := range map[string]*paho.Connect{
		"anonymous":          {ClientID: "x", CleanStart: true, KeepAlive: 30},
		"made-up password":   {ClientID: "x", CleanStart: true, KeepAlive: 30, Username: login.StaticUser(devB.DID()), UsernameFlag: true, Password: []byte("guess"), PasswordFlag: true},
		"another's password": {ClientID: "x", CleanStart: true, KeepAlive: 30, Username: login.StaticUser(devB.DID()), UsernameFlag: true, Password: f.secret(t, "device-dev-a"), PasswordFlag: true},
	} {
		if _, err := rawConnect(t, f.addr(), cp); err == nil {
			t.Errorf("%s: mosquitto admitted it", name)
		}
	}
	checkForeignSubscription(t, f.addr(), f.secret(t, "device-dev-b"), devB.DID(), filepath.Join(f.out, "secrets"), op.DID())
}

// checkForeignSubscription: device B subscribes to A's command topic and
// its own; the operator publishes a command to A, then one to B. B gets
// its own and never A's (mosquitto grants the SUBSCRIBE but its ACL
// filters every delivery; messages from one publisher keep their order,
// so B's own command arriving first proves A's was withheld).
func checkForeignSubscription(t *testing.T, addr string, pw []byte, devB did.DID, secrets string, op did.DID) {
	t.Helper()
	got := make(chan string, 4)
	b, err := rawConnectWith(t, addr, &paho.Connect{ClientID: "dev-b", CleanStart: true, KeepAlive: 30,
		Username: login.StaticUser(devB), UsernameFlag: true, Password: pw, PasswordFlag: true}, func(p paho.PublishReceived) (bool, error) {
		got <- p.Packet.Topic
		return true, nil
	})
	if err != nil {
		t.Fatalf("device B with its password: %v", err)
	}
	if _, err := b.Subscribe(ctxT(t), &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{
		{Topic: "torpor/v1/dev-a/cmd", QoS: 1}, {Topic: "torpor/v1/dev-b/cmd", QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	opPw, err := os.ReadFile(filepath.Join(secrets, "operator-"+op.String()[len(op.String())-12:]+".password"))
	if err != nil {
		t.Fatal(err)
	}
	o, err := rawConnect(t, addr, &paho.Connect{ClientID: "op", CleanStart: true, KeepAlive: 30,
		Username: login.StaticUser(op), UsernameFlag: true, Password: bytes.TrimSpace(opPw), PasswordFlag: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{"dev-a", "dev-b"} {
		if _, err := o.Publish(ctxT(t), &paho.Publish{Topic: "torpor/v1/" + dev + "/cmd", QoS: 1, Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case topic := <-got:
		if topic != "torpor/v1/dev-b/cmd" {
			t.Errorf("device B received %s", topic)
		}
	case <-ctxT(t).Done():
		t.Fatal("device B never received its own command")
	}
}
