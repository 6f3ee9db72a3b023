//go:build integration

package mqttsec

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/manage/managetest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/bearer"
	mq "github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startDevice starts a device (manage.Server) named name with key on
// broker, its store at path, allowing operator op; password, when set,
// is its static broker password.
func startDevice(t testing.TB, broker, name string, key *did.PrivateKey, op did.DID, path string, password ...byte) *manage.Server {
	t.Helper()
	st := mqtttest.OpenState(t, path, nil)
	dev := &managetest.Device{}
	s, err := manage.Start(manage.Config{Config: mq.Config{Broker: broker, Name: name, Key: key, DB: st.DB, Security: mq.Security{Password: password}},
		Operators: []did.DID{op}, Replay: st.Replay, Ledger: st.Ledger, Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Abort)
	if err := s.AwaitConnection(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	return s
}

// rawConnect opens a plain MQTT 5 connection to addr with cp.
func rawConnect(t testing.TB, addr string, cp *paho.Connect) (*paho.Client, error) {
	t.Helper()
	return rawConnectWith(t, addr, cp, nil)
}

// rawConnectWith is rawConnect with a handler of received messages.
func rawConnectWith(t testing.TB, addr string, cp *paho.Connect, onPub func(paho.PublishReceived) (bool, error)) (*paho.Client, error) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := paho.ClientConfig{Conn: conn, ClientID: cp.ClientID}
	if onPub != nil {
		cfg.OnPublishReceived = []func(paho.PublishReceived) (bool, error){onPub}
	}
	c := paho.NewClient(cfg)
	if _, err := c.Connect(ctxT(t), cp); err != nil {
		conn.Close()
		return nil, err
	}
	t.Cleanup(func() { c.Disconnect(&paho.Disconnect{}) })
	return c, nil
}

// withToken sets key's DID and a fresh token for brokerURL on cp.
func withToken(t testing.TB, cp *paho.Connect, key *did.PrivateKey, brokerURL string) *paho.Connect {
	t.Helper()
	tok, err := bearer.Issue(key, brokerURL, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cp.Username, cp.UsernameFlag, cp.Password, cp.PasswordFlag = key.DID().String(), true, []byte(tok), true
	return cp
}

// signStatus signs st as key, issued at, living ttl, as a device (or
// someone pretending to be one) would.
func signStatus(t testing.TB, key *did.PrivateKey, st envelope.Status, at time.Time, ttl time.Duration) []byte {
	t.Helper()
	o, err := governed.Sign(key, governed.Template{IssuedAt: at, Semantic: governed.Semantic{Schema: envelope.SchemaStatus},
		Payload: st, Purpose: envelope.PurposeStatus, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := o.MarshalJSON()
	return b
}

// ctl runs torporctl with args and returns its stdout, stderr and error.
func ctl(t testing.TB, env []string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t, "torporctl"), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}
