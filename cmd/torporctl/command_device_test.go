package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/manage/managetest"
	"github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
)

// TestDeviceScripts runs testdata/device: torporctl device against the
// embedded broker and a device (manage.Server with a recording Device) that
// allows the operator key $WORK/op.key. The custom command "devsleep"
// ends the device's session as a sleep would; "executed OP ARGS" checks
// that the last command the device executed was OP with the JSON
// arguments ARGS, empty for none.
func TestDeviceScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:   "testdata/device",
		Setup: setupDevice,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"devsleep": func(ts *testscript.TestScript, neg bool, args []string) {
				c := ts.Value("client").(*manage.Server)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				ts.Check(c.Sleep(ctx, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))
			},
			"executed": executed,
		},
	})
}

// executed is the script command "executed OP ARGS".
func executed(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: executed OP ARGS")
	}
	cmds := ts.Value("device").(*managetest.Device).Executed()
	if len(cmds) == 0 {
		ts.Fatalf("the device executed no command")
	}
	last := cmds[len(cmds)-1]
	got := ""
	if last.Args != nil {
		b, err := json.Marshal(last.Args)
		ts.Check(err)
		got = string(b)
	}
	if last.Op != args[0] || got != args[1] {
		ts.Fatalf("the device last executed %s %s, want %s %s", last.Op, got, args[0], args[1])
	}
}

func setupDevice(env *testscript.Env) error {
	t := env.T().(testing.TB)
	op, err := did.Generate(nil)
	if err != nil {
		return err
	}
	if err := did.SaveKey(filepath.Join(env.WorkDir, "op.key"), op, false); err != nil {
		return err
	}
	devKey, err := did.Generate(nil)
	if err != nil {
		return err
	}
	b := mqtttest.StartEmbedded(t, nil)
	b.AddOperator(op.DID())
	st := mqtttest.OpenState(t, filepath.Join(t.TempDir(), "agent.db"), nil)
	dev := &managetest.Device{State: envelope.Status{Mode: "hourly_wake", Window: &envelope.Window{Minute: 17, LengthSec: 300},
		Lost: 3, LostHandOffs: []envelope.LostHandOff{{ObjectID: "019bc186-de00-7619-8837-14d9cfa06ed2", Issuer: "did:example:alice",
			Purpose: "comms:message", Seq: 7, RecordedAt: time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)}}}}
	dev.Result = func(_ context.Context, c manage.Command) manage.Result {
		switch c.Op {
		case command.OpStatus:
			return manage.OK(map[string]any{"status": dev.State, "ledger": map[string]int{"completed": 2}})
		case command.OpRotateKeys:
			return manage.Failed(command.ReasonUnsupported, "no key rotation here")
		}
		return manage.OK(map[string]any{"op": c.Op, "args": c.Args})
	}
	c, err := manage.Start(manage.Config{Config: mqtt.Config{Broker: b.URL(), Name: "dev-1", Key: devKey, DB: st.DB}, Operators: []did.DID{op.DID()}, Replay: st.Replay, Ledger: st.Ledger, Device: dev})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.AwaitConnection(ctx); err != nil {
		return err
	}
	env.Defer(c.Abort)
	env.Values["client"] = c
	env.Values["device"] = dev
	env.Setenv("TORPOR_BROKER", b.URL())
	env.Setenv("BROKER_HOSTPORT", strings.TrimPrefix(b.URL(), "mqtt://"))
	env.Setenv("TORPOR_KEY", filepath.Join(env.WorkDir, "op.key"))
	env.Setenv("TORPOR_KNOWN_DEVICES", filepath.Join(env.WorkDir, "known_devices"))
	env.Setenv("DEVICE_DID", devKey.DID().String())
	other, _ := did.Generate(nil)
	env.Setenv("OTHER_DID", other.DID().String())
	return nil
}

// TestPrintFields checks the text rendering of a reply's result.
func TestPrintFields(t *testing.T) {
	var b strings.Builder
	printFields(&b, "  ", json.RawMessage(`{"b":"two","a":1,"c":{"x":true}}`))
	want := "  a: 1\n  b: two\n  c: {\"x\":true}\n"
	if b.String() != want {
		t.Errorf("printFields = %q, want %q", b.String(), want)
	}
}

// TestOperationFirst: the flags every device operation takes may come
// before the operation, with their values; "config get|set" stays whole.
func TestOperationFirst(t *testing.T) {
	for in, want := range map[string]string{
		"status dev-1":                      "status dev-1",
		"--broker B status dev-1":           "status --broker B dev-1",
		"--json --wait=1s halt dev-1":       "halt --json --wait=1s dev-1",
		"--key K config --json get dev-1 m": "config get --key K --json dev-1 m",
		"--relay R admit did:key:z":         "admit --relay R did:key:z",
		"--broker":                          "--broker",
	} {
		if got := strings.Join(operationFirst(strings.Fields(in)), " "); got != want {
			t.Errorf("operationFirst(%q) = %q, want %q", in, got, want)
		}
	}
}
