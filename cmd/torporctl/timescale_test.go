package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/manage/managetest"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
	"github.com/torpor-dev/torpor/transport/relay"
)

// TestOperatorCommandsOnATimeScaledRelay: on a relay whose clock runs 180
// times faster (some 5 h ahead), queue and device admit are refused with
// the relay's reason on the real clock and work with --time-scale 180;
// fleet open says how long its link lasts in real time.
func TestOperatorCommandsOnATimeScaledRelay(t *testing.T) {
	relayNow := time.Now().Add(5 * time.Hour)
	op, agent := didtest.New(t), didtest.New(t)
	r := worldtest.Start(t, relay.Config{Clock: scaledAt{clocktest.New(relayNow), 180}, Access: relay.Access{Operators: []did.DID{op.DID()}}})
	opKey := filepath.Join(t.TempDir(), "op.key")
	if err := saveKey(opKey, op, false); err != nil {
		t.Fatal(err)
	}
	ctl := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	queue := []string{"queue", "list", "--relay", r.URL, "--key", opKey, "--agent", agent.DID().String()}
	if code, out, errOut := ctl(queue...); code != 1 || !strings.Contains(out+errOut, "401") {
		t.Errorf("queue list on the real clock: exit %d\n%s%s\nwant exit 1 and the relay's 401", code, out, errOut)
	}
	if code, out, errOut := ctl(append(queue, "--time-scale", "180")...); code != 0 || !strings.Contains(out, "0 records") {
		t.Errorf("queue list --time-scale 180: exit %d\n%s%s", code, out, errOut)
	}
	admit := []string{"device", "admit", "--relay", r.URL, "--key", opKey, agent.DID().String()}
	if code, out, errOut := ctl(admit...); code != 1 || !regexp.MustCompile(`relay answered 401 Unauthorized: unauthorized: \S`).MatchString(errOut) {
		t.Errorf("device admit on the real clock: exit %d\n%s%s\nwant exit 1 and the relay's reason", code, out, errOut)
	}
	if code, out, errOut := ctl(append(admit, "--time-scale", "180")...); code != 0 || !strings.Contains(out, "admitted "+agent.DID().String()) {
		t.Errorf("device admit --time-scale 180: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := ctl("fleet", "open", "--relay", r.URL, "--key", opKey, "--time-scale", "180"); code != 0 || !strings.Contains(out, "/fleet/login?token=") ||
		!strings.Contains(errOut, "within 667ms (2m0s on the relay's clock, which runs 180 times faster)") {
		t.Errorf("fleet open --time-scale 180: exit %d\n%s%s", code, out, errOut)
	}
}

// TestDeviceStatusOnATimeScaledRelay: a sleeping device on the relay's
// compressed clock, some 5 h ahead of the real one, signed its retained
// status just now on that clock: device status --time-scale says so,
// not "signed -5h0m0s ago"; set-mode --wake-in counts from that clock.
func TestDeviceStatusOnATimeScaledRelay(t *testing.T) {
	relayNow := time.Now().Add(5 * time.Hour)
	clk := scaledAt{clocktest.New(relayNow), 180}
	r := worldtest.Start(t, relay.Config{Clock: clk})
	op, devKey := didtest.New(t), didtest.New(t)
	dir := t.TempDir()
	opKey := filepath.Join(dir, "op.key")
	if err := saveKey(opKey, op, false); err != nil {
		t.Fatal(err)
	}
	b := mqtttest.StartEmbedded(t, nil)
	b.AddOperator(op.DID())
	st := mqtttest.OpenState(t, filepath.Join(dir, "agent.db"), nil)
	dev := &managetest.Device{State: envelope.Status{Mode: "sleep"}}
	c, err := manage.Start(manage.Config{Config: mqtt.Config{Broker: b.URL(), Name: "dev-1", Key: devKey, DB: st.DB, Clock: clk},
		Operators: []did.DID{op.DID()}, Replay: st.Replay, Ledger: st.Ledger, Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Abort)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.AwaitConnection(ctx); err != nil {
		t.Fatal(err)
	}
	device := func(args ...string) (int, string) {
		var out bytes.Buffer
		code := run(context.Background(), append([]string{"device", args[0], "--broker", b.URL(), "--key", opKey, "--known-devices", filepath.Join(dir, "known"),
			"--relay", r.URL, "--time-scale", "180"}, args[1:]...), &out, &out)
		return code, out.String()
	}
	// --wake-in counts from the relay's clock, which the device's runs as
	if code, out := device("status", "dev-1"); code != 0 {
		t.Fatalf("device status, awake: exit %d\n%s", code, out)
	}
	if code, out := device("set-mode", "--wake-in", "10m", "dev-1", "sleep"); code != 0 {
		t.Fatalf("device set-mode --wake-in 10m: exit %d\n%s", code, out)
	}
	cmds := dev.Executed()
	if len(cmds) == 0 {
		t.Fatal("the device executed nothing")
	}
	if a, ok := cmds[len(cmds)-1].Args.(*command.SetModeArgs); !ok || a.WakeAt == nil || a.WakeAt.Sub(relayNow) < 9*time.Minute || a.WakeAt.Sub(relayNow) > 11*time.Minute {
		t.Errorf("set-mode args %#v, want wakeAt 10 min after the relay's now %v", cmds[len(cmds)-1].Args, relayNow)
	}
	if err := c.Sleep(ctx, relayNow.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	code, out := device("status", "dev-1")
	if code != 0 || !regexp.MustCompile(`answered from its retained status, signed \d+s ago`).MatchString(out) {
		t.Errorf("device status --time-scale 180: exit %d\n%s", code, out)
	}
}
