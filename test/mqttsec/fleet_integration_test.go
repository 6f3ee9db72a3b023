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

// mosquittoFleet is a real mosquitto running the configuration torporctl
// mqtt acl wrote for two devices, dev-a and dev-b, and one operator.
type mosquittoFleet struct {
	m              *mqtttest.Mosquitto
	out, known     string // torporctl's output directory; the devices file
	op, devA, devB *did.PrivateKey
}

// startMosquittoFleet writes the fleet's configuration with torporctl mqtt
// acl and starts mosquitto on it. asDebian starts it as Debian's unit
// does: as root, dropping to the user mosquitto before it reads the
// password file (torporctl gives that file to the group mosquitto).
func startMosquittoFleet(t *testing.T, asDebian bool) *mosquittoFleet {
	t.Helper()
	bin, err := mqtttest.FindMosquitto()
	if err != nil {
		testenv.Unavailable(t, err.Error())
	}
	f := &mosquittoFleet{op: didtest.New(t), devA: didtest.New(t), devB: didtest.New(t)}
	dir := t.TempDir()
	if asDebian {
		testenv.RequireRoot(t)
		if dir, err = os.MkdirTemp("", "mqttsec-"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f.known = write("devices", "dev-a "+f.devA.DID().String()+"\ndev-b "+f.devB.DID().String()+"\n")
	operators := write("operators", "# the operators\n"+f.op.DID().String()+"\n")
	f.out = filepath.Join(dir, "mosquitto")
	if o, e, err := ctl(t, nil, "mqtt", "acl", "--devices", f.known, "--operators", operators, "--out", f.out); err != nil {
		t.Fatalf("torporctl mqtt acl: %v\n%s%s", err, o, e)
	}
	conf, err := os.ReadFile(filepath.Join(f.out, "mosquitto.conf"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(conf)), "\n")
	if asDebian {
		lines = append(lines, "user mosquitto")
	}
	f.m = mqtttest.StartMosquittoWith(t, bin, lines...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mosquitto:\n%s", f.m.Log())
		}
	})
	return f
}

func (f *mosquittoFleet) addr() string { return strings.TrimPrefix(f.m.URL(), "mqtt://") }

// secret is the generated password of label (device-dev-a, ...).
func (f *mosquittoFleet) secret(t testing.TB, label string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.out, "secrets", label+".password"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

// opSecretFile is the operator's password file.
func (f *mosquittoFleet) opSecretFile() string {
	d := f.op.DID().String()
	return filepath.Join(f.out, "secrets", "operator-"+d[len(d)-12:]+".password")
}

// connect opens a raw MQTT 5 connection as key with the password of label;
// received, when set, gets every PUBLISH.
func (f *mosquittoFleet) connect(t *testing.T, key *did.PrivateKey, label string, received chan<- *paho.Publish) (*paho.Client, error) {
	t.Helper()
	var onPub func(paho.PublishReceived) (bool, error)
	if received != nil {
		onPub = func(p paho.PublishReceived) (bool, error) {
			select {
			case received <- p.Packet:
			default:
			}
			return true, nil
		}
	}
	var pw []byte
	if label == "operator" {
		b, err := os.ReadFile(f.opSecretFile())
		if err != nil {
			t.Fatal(err)
		}
		pw = bytes.TrimSpace(b)
	} else {
		pw = f.secret(t, label)
	}
	return rawConnectWith(t, f.addr(), &paho.Connect{ClientID: label, CleanStart: true, KeepAlive: 30,
		Username: login.StaticUser(key.DID()), UsernameFlag: true, Password: pw, PasswordFlag: true}, onPub)
}
