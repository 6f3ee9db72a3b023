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
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/mqtt/login"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
)

// TestMosquittoACL: torporctl mqtt acl writes a configuration with which
// the real mosquitto admits the fleet's device and operator (with their
// generated passwords) and refuses an anonymous client, a made-up
// password, another client's password, and a device subscribing to
// another device's commands.
func TestMosquittoACL(t *testing.T) {
	bin, err := mqtttest.FindMosquitto()
	if err != nil {
		testenv.Unavailable(t, err.Error())
	}
	op, devA, devB := didtest.New(t), didtest.New(t), didtest.New(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	devices := write("devices", "dev-a "+devA.DID().String()+"\ndev-b "+devB.DID().String()+"\n")
	operators := write("operators", "# the operators\n"+op.DID().String()+"\n")
	out := filepath.Join(dir, "mosquitto")
	if o, e, err := ctl(t, nil, "mqtt", "acl", "--devices", devices, "--operators", operators, "--out", out); err != nil {
		t.Fatalf("torporctl mqtt acl: %v\n%s%s", err, o, e)
	}
	conf, err := os.ReadFile(filepath.Join(out, "mosquitto.conf"))
	if err != nil {
		t.Fatal(err)
	}
	m := mqtttest.StartMosquittoWith(t, bin, strings.Split(strings.TrimSpace(string(conf)), "\n")...)
	secret := func(label string) []byte {
		b, err := os.ReadFile(filepath.Join(out, "secrets", label+".password"))
		if err != nil {
			t.Fatal(err)
		}
		return bytes.TrimSpace(b)
	}
	opSecret := filepath.Join(out, "secrets", "operator-"+op.DID().String()[len(op.DID().String())-12:]+".password")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mosquitto:\n%s", m.Log())
		}
	})
	startDevice(t, m.URL(), "dev-a", devA, op.DID(), filepath.Join(t.TempDir(), "a.db"), secret("device-dev-a")...)
	o, e, err := ctl(t, []string{"TORPOR_KNOWN_DEVICES=" + filepath.Join(dir, "known")}, "device", "status", "--broker", m.URL(),
		"--key", saveKey(t, op), "--mqtt-password-file", opSecret, "--did", devA.DID().String(), "dev-a")
	if err != nil || !strings.Contains(o, "  ok") {
		t.Fatalf("the operator's status command through mosquitto: %v\n%s%s\nmosquitto:\n%s", err, o, e, m.Log())
	}

	addr := strings.TrimPrefix(m.URL(), "mqtt://")
	for name, cp := range map[string]*paho.Connect{
		"anonymous":          {ClientID: "x", CleanStart: true, KeepAlive: 30},
		"made-up password":   {ClientID: "x", CleanStart: true, KeepAlive: 30, Username: login.StaticUser(devB.DID()), UsernameFlag: true, Password: []byte("guess"), PasswordFlag: true},
		"another's password": {ClientID: "x", CleanStart: true, KeepAlive: 30, Username: login.StaticUser(devB.DID()), UsernameFlag: true, Password: secret("device-dev-a"), PasswordFlag: true},
	} {
		if _, err := rawConnect(t, addr, cp); err == nil {
			t.Errorf("%s: mosquitto admitted it", name)
		}
	}
	checkForeignSubscription(t, addr, secret("device-dev-b"), devB.DID(), filepath.Join(out, "secrets"), op.DID())
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
