//go:build integration

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/torpor-dev/torpor/did"
)

// TestMQTTScripts runs testdata/mqtt/*.txt: the torpor-agent binary (this
// test binary, as testscript.Main runs it) with a broker configured,
// commanded by the real torporctl built from this tree, over the relay's
// embedded broker.
func TestMQTTScripts(t *testing.T) {
	bin := buildTorporctl(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/mqtt",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("TORPOR_KNOWN_DEVICES", filepath.Join(env.WorkDir, "known_devices"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"stack": cmdStack},
	})
}

// buildTorporctl builds cmd/torporctl into a temporary directory.
func buildTorporctl(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build torporctl: %v", err)
	}
	dir := t.TempDir()
	cmd := exec.Command(goBin, "build", "-o", filepath.Join(dir, "torporctl"), "github.com/torpor-dev/torpor/cmd/torporctl")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building torporctl: %v\n%s", err, out)
	}
	return dir
}

// cmdStack is the script command
//
//	stack start OPERATOR_KEY   start a relay and its embedded broker, make
//	                           the agent's key and agent.json (always_on,
//	                           MQTT name dev-1, OPERATOR_KEY's DID its
//	                           operator). Sets RELAY, BROKER and AGENT.
func cmdStack(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 || args[0] != "start" {
		ts.Fatalf("usage: stack start OPERATOR_KEY")
	}
	op, err := did.LoadKey(ts.MkAbs(args[1]))
	ts.Check(err)
	dir := ts.MkAbs("stack")
	ts.Check(os.MkdirAll(dir, 0o700))
	st := startStack(dir, ts.Check, ts.Defer)
	st.broker.AddOperator(op.DID())
	key, err := did.Generate(nil)
	ts.Check(err)
	ts.Check(did.SaveKey(ts.MkAbs("agent.key"), key, false))
	conf := map[string]any{"version": 1, "key": ts.MkAbs("agent.key"), "dataDir": ts.MkAbs("data"),
		"relay": st.relayURL, "mode": "always_on", "purposes": []string{"comms:*"},
		"handlers": []any{map[string]any{"purpose": "comms:*", "exec": map[string]any{"path": "/bin/true"}}},
		"mqtt":     map[string]any{"broker": st.brokerURL, "name": "dev-1", "operators": []string{op.DID().String()}}}
	b, err := json.MarshalIndent(conf, "", "  ")
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs("agent.json"), b, 0o600))
	ts.Setenv("RELAY", st.relayURL)
	ts.Setenv("BROKER", st.brokerURL)
	ts.Setenv("AGENT", key.DID().String())
}
