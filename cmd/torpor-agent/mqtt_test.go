package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/broker"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/transport/relay"
)

// stack is a relay with its embedded MQTT broker, on loopback.
type stack struct {
	relayURL, brokerURL string
	broker              *broker.Broker
}

// startStack starts the stack with its files in dir; check fails the test
// on an error, and cleanup registers the stack's shutdown.
func startStack(dir string, check func(error), cleanup func(func())) *stack {
	brk, err := broker.Start(broker.Config{Listen: "127.0.0.1:0", DataDir: dir})
	check(err)
	r, err := worldtest.Open(dir, relay.Config{Ops: relay.Ops{MQTTBroker: brk.URL()}})
	if err != nil {
		brk.Close()
	}
	check(err)
	cleanup(func() {
		r.Close()
		brk.Close()
	})
	return &stack{relayURL: r.URL, brokerURL: brk.URL(), broker: brk}
}

func testStack(t *testing.T) *stack {
	t.Helper()
	return startStack(t.TempDir(), func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}, t.Cleanup)
}

// TestDaemonTakesMQTTCommands runs the daemon as the binary does, with the
// MQTT flags, against a real relay and the relay's embedded broker: an
// operator's signed status command is answered, signed by the agent, and a
// shutdown leaves the retained status offline.
func TestDaemonTakesMQTTCommands(t *testing.T) {
	st := testStack(t)
	dir := t.TempDir()
	agentKey, opKey := runtimetest.Key(t, 40), runtimetest.Key(t, 41)
	st.broker.AddOperator(opKey.DID())
	keyFile := filepath.Join(dir, "agent.key")
	if err := did.SaveKey(keyFile, agentKey, false); err != nil {
		t.Fatal(err)
	}
	a, rest, err := parseArgs([]string{"--config", filepath.Join(dir, "none.json"), "--key", keyFile,
		"--data-dir", filepath.Join(dir, "data"), "--relay", st.relayURL, "--mode", "always_on",
		"--purposes", "comms:*", "--handler", "comms:*=exec:/bin/true",
		"--mqtt-broker", st.brokerURL, "--mqtt-name", "dev-1", "--operator", opKey.DID().String()}, &bytes.Buffer{})
	if err != nil || len(rest) != 0 {
		t.Fatalf("parseArgs: %v %q", err, rest)
	}
	a.explicit = false // the file is absent on purpose: flags alone configure the agent
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log runtimetest.Log
	done := make(chan error, 1)
	go func() { done <- daemon(ctx, a, &log) }()

	wait, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	op, err := command.DialOperator(wait, command.OperatorConfig{Broker: st.brokerURL, Key: opKey})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close(context.Background())
	awaitState(t, wait, op, agentKey.DID(), envelope.StateAwake, done, &log)
	s, err := op.Send(wait, "dev-1", command.Spec{Device: agentKey.DID(), Seq: command.NextSeq(0, time.Now()), Op: command.OpStatus}, false)
	if err != nil || s.NoSubscribers {
		t.Fatalf("sending status: %v (no subscribers: %v)", err, s.NoSubscribers)
	}
	r, _, err := op.AwaitReply(wait, "dev-1", s.Object.ID, agentKey.DID())
	if err != nil {
		t.Fatalf("no reply to status: %v\nlog:\n%s", err, log.String())
	}
	var res struct{ Status envelope.Status }
	if r.Outcome != command.OutcomeOK || json.Unmarshal(r.Result, &res) != nil || res.Status.Mode != "always_on" {
		t.Fatalf("status reply = %+v (%s), want ok in mode always_on", r, r.Result)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("daemon: %v", err)
	}
	awaitState(t, wait, op, agentKey.DID(), envelope.StateStopped, nil, &log)
	if l := log.String(); !strings.Contains(l, "mqttName=dev-1") {
		t.Errorf("the start line does not name the MQTT device:\n%s", l)
	}
}

// awaitState waits until the device's retained status reads want.
func awaitState(t *testing.T, ctx context.Context, op *command.Operator, dev did.DID, want envelope.State, done <-chan error, log *runtimetest.Log) {
	t.Helper()
	for {
		select {
		case err := <-done:
			t.Fatalf("daemon ended: %v\nlog:\n%s", err, log.String())
		default:
		}
		st, _, err := op.Status(ctx, "dev-1", dev)
		if err == nil && st.State == want {
			return
		}
		if err != nil && !errors.Is(err, command.ErrNoStatus) || ctx.Err() != nil {
			t.Fatalf("status %s never came: %v\nlog:\n%s", want, err, log.String())
		}
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"stopped", nil, 0},
		{"failed", errors.New("no wake source"), 1},
		{"restart", fmt.Errorf("wrapped: %w", runtime.ErrRestart), ExitRestart},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err, io.Discard); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
	if ExitRestart != 75 {
		t.Errorf("ExitRestart = %d; the documentation and systemd unit say 75", ExitRestart)
	}
}
