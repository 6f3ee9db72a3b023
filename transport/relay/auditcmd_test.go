package relay

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/broker"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
)

// TestCommandConstants: the relay's copy of the command's purpose and
// schema is transport/mqtt/command's.
func TestCommandConstants(t *testing.T) {
	if commandPurpose != command.Purpose || commandSchema != command.Schema {
		t.Fatalf("relay: %q %q; command: %q %q", commandPurpose, commandSchema, command.Purpose, command.Schema)
	}
}

// signedCommand is a set-mode command of op for dev, as JSON.
func signedCommand(t *testing.T, op *did.PrivateKey, dev did.DID, at time.Time) []byte {
	t.Helper()
	o, err := command.Sign(op, command.Spec{Device: dev, Seq: 1, Op: command.OpSetMode, IssuedAt: at,
		Args: &command.SetModeArgs{Mode: "hourly_wake"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCommandAuditVerifies: a command whose signature verifies is
// recorded with its operation, device, object id and purpose; a tampered
// one, one signed by another DID than the publisher's, an expired one
// and one that is no object are recorded as refused, with why; no record
// holds the command's arguments.
func TestCommandAuditVerifies(t *testing.T) {
	op, other, dev := didtest.Key(t, 7), didtest.Key(t, 8), didtest.Key(t, 1)
	clk := clocktest.New(t0)
	st, err := audit.OpenBolt(filepath.Join(t.TempDir(), "audit.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	good := signedCommand(t, op, dev.DID(), t0)
	var obj struct{ ID string }
	json.Unmarshal(good, &obj)
	cbor, ct, err := envelope.Encode(good, true)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, ct string
		payload  []byte
		signer   did.DID
		outcome  string
		reason   string
	}{
		{"good", "application/json", good, op.DID(), audit.OK, ""},
		{"good as CBOR", ct, cbor, op.DID(), audit.OK, ""},
		{"tampered", "application/json", []byte(strings.Replace(string(good), "hourly_wake", "always_on", 1)), op.DID(), audit.Refused, "signature does not verify"},
		{"another signer", "application/json", signedCommand(t, other, dev.DID(), t0), op.DID(), audit.Refused, "signed by " + other.DID().String() + ", not by the publisher's DID"},
		{"expired", "application/json", signedCommand(t, op, dev.DID(), t0.Add(-48*time.Hour)), op.DID(), audit.Refused, "expired"},
		{"garbage", "application/json", []byte("wake up"), op.DID(), audit.Refused, "not a Governed Object"},
	}
	record := CommandAudit(st, clk, nil)
	for _, c := range cases {
		record(MQTTCommand{Operator: c.signer, Device: "pump-1", ContentType: c.ct, Payload: c.payload})
	}
	p, err := st.List(context.Background(), 0, 0)
	if err != nil || len(p.Records) != len(cases) {
		t.Fatalf("List = %d records, %v; want %d", len(p.Records), err, len(cases))
	}
	for i, c := range cases {
		r := p.Records[len(cases)-1-i]
		if r.Outcome != c.outcome || r.Reason != c.reason || r.Operator != op.DID().String() || r.Action != audit.ActionCommand || !r.Time.Equal(t0) {
			t.Errorf("%s: %+v, want %s %q", c.name, r, c.outcome, c.reason)
		}
		if b, _ := json.Marshal(r); strings.Contains(string(b), "hourly_wake") || strings.Contains(string(b), "windowSec") {
			t.Errorf("%s: the record holds the arguments: %s", c.name, b)
		}
		if c.outcome == audit.OK && (r.Command != "set-mode" || r.Device != dev.DID().String() || r.ObjectID != obj.ID || r.Purpose != command.Purpose) {
			t.Errorf("%s: %+v, want set-mode for %s, object %s", c.name, r, dev.DID(), obj.ID)
		}
	}
}

// TestCommandAuditThroughBroker: a command an operator publishes through
// the embedded broker reaches the audit log.
func TestCommandAuditThroughBroker(t *testing.T) {
	op, dev := didtest.Key(t, 7), didtest.Key(t, 1)
	st, err := audit.OpenBolt(filepath.Join(t.TempDir(), "audit.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	done := make(chan struct{}, 1)
	record := CommandAudit(st, clocktest.New(t0), nil)
	b, err := broker.Start(broker.Config{Listen: "127.0.0.1:0", Operators: []did.DID{op.DID()}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.ObserveCommands(func(c broker.Command) { record(MQTTCommand(c)); done <- struct{}{} })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mqttOperator(t, ctx, b, op)
	cmd := signedCommand(t, op, dev.DID(), time.Now())
	if _, err := c.Publish(ctx, &paho.Publish{Topic: "torpor/v1/pump-1/cmd", QoS: 1, Payload: cmd}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the command was not recorded")
	}
	p, err := st.List(ctx, 0, 0)
	if err != nil || len(p.Records) != 1 || p.Records[0].Command != "set-mode" || p.Records[0].Outcome != audit.OK {
		t.Fatalf("List = %+v, %v; want the set-mode command, ok", p.Records, err)
	}
}

// mqttOperator connects to b as operator key.
func mqttOperator(t *testing.T, ctx context.Context, b *broker.Broker, key *did.PrivateKey) *paho.Client {
	t.Helper()
	conn, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := bearer.Issue(key, b.URL(), time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c := paho.NewClient(paho.ClientConfig{Conn: conn, ClientID: "operator"})
	cp := &paho.Connect{ClientID: "operator", CleanStart: true, KeepAlive: 30, Username: key.DID().String(), UsernameFlag: true,
		Password: []byte(tok), PasswordFlag: true}
	if _, err := c.Connect(ctx, cp); err != nil {
		conn.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Disconnect(&paho.Disconnect{}) })
	return c
}
