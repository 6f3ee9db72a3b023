//go:build integration

package tenants

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// rolloutScale is the relay's, the agent's and torporctl's clock in
// TestTenantRolloutInstalls: an hour in 6 s, so that the always_on
// agent's hourly publish, which carries the offer, comes within seconds.
const rolloutScale = "600"

// TestTenantRolloutInstalls: on a hosted relay, tenant a's owner signs
// this tree's torpor-agent as version 2 into a's update repository and
// a's operator publishes it (torporctl update publish --tenant). A real
// agent enrolled by a's owner, run as the unit runs it (--slot-launch),
// joins a; a's operator starts a rollout with torporctl update rollout
// start --tenant, the relay offers the agent the build at its next
// publish, the agent installs it into slot a, restarts into it on trial,
// proves it, and a's rollout counts it installed from its signed status. Refused with the real binaries: a's operator naming b's device
// (403 naming it), the host and b's operator starting or reading a's
// rollout; the host's own list does not show it.
func TestTenantRolloutInstalls(t *testing.T) {
	online := onlineKeys(t)
	epoch := time.Now().UTC().Format(time.RFC3339Nano)
	w := newHostedWorld(t, `{}`, `{}`, append(online.flags(), "--time-scale", rolloutScale, "--time-epoch", epoch)...)
	a := w.keys["ownerA"].DID().String()
	dirA := filepath.Join(w.dir, "tuf-a")
	w.ok(t, "update", "keys", "init", "--dir", dirA, "--relay-snapshot", online.snapshot.DID().String(), "--relay-timestamp", online.timestamp.DID().String())
	agentBin := testenv.Binary(t, "torpor-agent")
	target := "torpor-agent/2/linux-" + goruntime.GOARCH
	w.ok(t, "update", "sign-target", "--dir", dirA, "--name", target, "--version", "2", "--goarch", goruntime.GOARCH, "--goarm", "", "--gzip", agentBin)
	w.ok(t, "update", "publish", "--dir", dirA, "--relay", w.relay.URL, "--key", w.files["opA"], "--root", "1", "--tenant", a, "--time-scale", rolloutScale)
	sum := testenv.SignedSHA256(t, dirA, target)

	unit := w.tenantAgent(t, "ownerA", dirA, epoch)
	p := unit.boot(t)
	w.relay.Next(t, 1, "agent admitted by its owner's enrolment", unit.did)
	devB := w.enrol(t, "ownerB").DID().String()

	rollout := func(key string, args ...string) (string, bool) {
		return w.ctl1(t, append([]string{"update", "rollout", "--relay", w.relay.URL, "--key", w.files[key], "--time-scale", rolloutScale}, args...)...)
	}
	own := []string{"start", "r1", "--target", target, "--version", "2", "--sha256", sum, "--waves", "100"}
	start := append(own[:len(own):len(own)], "--tenant", a)
	for _, c := range []struct {
		name, key string
		args      []string
		want      []string
	}{
		{"a's operator naming b's device", "opA", append(start, "--devices", unit.did+","+devB), []string{"403", "not_tenant_operator", devB}},
		{"the host starting a's", "host", start, []string{"403", "not_tenant_operator"}},
		{"b's operator starting a's", "opB", start, []string{"403", "not_tenant_operator"}},
		{"a's operator in the relay's own", "opA", own, []string{"403", "not_operator"}},
	} {
		if out, ok := rollout(c.key, c.args...); ok || !containsAll(out, c.want...) {
			t.Errorf("%s: ok=%v %s; want %q", c.name, ok, out, c.want)
		}
	}
	if out, ok := rollout("opA", start...); !ok || !strings.Contains(out, "1 devices: 0 installed") {
		t.Fatalf("a's operator starting r1 over a's devices: ok=%v %s", ok, out)
	}
	checkReadsRefused(t, rollout, a)
	if m := p.Wait(t, regexp.MustCompile(`msg="update put on trial" .*target=(\S+) version=(\S+) rollout=r1`)); m[1] != target || m[2] != "2" {
		t.Fatalf("the agent put %s %s on trial; want %s 2", m[1], m[2], target)
	}
	if code := unit.exit(t, p); code != 75 {
		t.Fatalf("after the install the agent exited with %d; want 75 (restart)", code)
	}
	p = unit.boot(t)
	p.Wait(t, regexp.MustCompile(`msg="update installed" slot=a version=2`))
	r := awaitInstalled(t, func(args ...string) (string, bool) { return rollout("opA", append(args, "--tenant", a)...) })
	if r.State != "done" || r.Counts.Devices != 1 || r.Counts.Pending != 0 {
		t.Errorf("a's rollout r1: %+v; want done, its one device installed", r)
	}
}

// awaitInstalled returns rollout r1's status, read with rollout (torporctl
// update rollout with its key and tenant), once it counts one device
// installed; a minute without fails the test.
func awaitInstalled(t *testing.T, rollout func(args ...string) (string, bool)) operatorapi.Rollout {
	t.Helper()
	limit := time.Now().Add(time.Minute)
	for {
		var r operatorapi.Rollout
		out, ok := rollout("--json", "status", "r1")
		if err := json.Unmarshal([]byte(out), &r); !ok || err != nil {
			t.Fatalf("rollout status: %v %s", err, out)
		}
		if r.Counts.Installed == 1 {
			return r
		}
		if time.Now().After(limit) {
			t.Fatalf("rollout r1 a minute after the install: %s", out)
		}
		time.Sleep(200 * time.Millisecond) // polling the relay, not waiting for the agent's time
	}
}

// checkReadsRefused: the host and b's operator cannot read tenant a's
// rollout r1, and the host's own rollouts have none of that id.
func checkReadsRefused(t *testing.T, rollout func(key string, args ...string) (string, bool), a string) {
	t.Helper()
	for _, c := range []struct{ name, key, tenant, want string }{
		{"the host reading a's", "host", a, "403"},
		{"b's operator reading a's", "opB", a, "403"},
		{"the host reading its own", "host", "", "404"},
	} {
		args := []string{"status", "r1"}
		if c.tenant != "" {
			args = append(args, "--tenant", c.tenant)
		}
		if out, ok := rollout(c.key, args...); ok || !strings.Contains(out, c.want) {
			t.Errorf("%s: ok=%v %s; want %s", c.name, ok, out, c.want)
		}
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// agentUnit is a real torpor-agent installed as the .deb installs it:
// this tree's build is the packaged binary, started with --slot-launch
// as the systemd unit starts it, enrolled by an owner, its update check
// on at version 1 with the owner's first root.
type agentUnit struct {
	bin, did string
	flags    []string
}

func (w *world) tenantAgent(t *testing.T, owner, tufDir, epoch string) agentUnit {
	t.Helper()
	dev := didtest.New(t)
	data := filepath.Join(w.dir, "agent-"+owner)
	enr := filepath.Join(w.dir, "enrolment-"+owner)
	conf := filepath.Join(w.dir, "agent-"+owner+".json")
	err := os.WriteFile(enr, []byte(w.ok(t, "enrol", "--key", w.files[owner], dev.DID().String())), 0o600)
	root, err2 := os.ReadFile(filepath.Join(tufDir, "1.root.json"))
	if err = errors.Join(err, err2, os.MkdirAll(filepath.Join(data, "update", "meta"), 0o700)); err == nil {
		err = os.WriteFile(filepath.Join(data, "update", "meta", "root.json"), root, 0o600)
	}
	c := map[string]any{"version": 1, "enrolment": enr, "update": map[string]any{"version": 1, "budgetBytes": 64 << 20,
		"trialStarts": 2, "trialDeadline": "8s"}}
	b, _ := json.Marshal(c)
	if err == nil {
		err = os.WriteFile(conf, b, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
	return agentUnit{bin: testenv.Binary(t, "torpor-agent"), did: dev.DID().String(), flags: []string{"--slot-launch", "--config", conf,
		"--key", testenv.KeyFile(t, dev), "--data-dir", data, "--relay", w.relay.URL, "--mode", "always_on", "--name", "plot-" + owner,
		"--purposes", "comms:*", "--handler", "*=exec:/bin/true", "--time-scale", rolloutScale, "--time-epoch", epoch}}
}

// boot starts the unit once, in a process group of its own (systemd's
// KillMode=control-group) that is killed when the test ends, and waits
// for the agent to start.
func (u agentUnit) boot(t *testing.T) *testenv.Proc {
	t.Helper()
	p := testenv.StartWith(t, u.bin, func(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }, u.flags...)
	t.Cleanup(func() { syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL) })
	p.Wait(t, regexp.MustCompile(`msg="torpor-agent starting"`))
	return p
}

// exit waits for the unit's start p to end and returns its exit status.
func (u agentUnit) exit(t *testing.T, p *testenv.Proc) int {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(time.Minute):
		t.Fatalf("the agent did not exit in a minute after its install:\n%s", p.Log())
	}
	p.Cmd.Wait()
	return p.Cmd.ProcessState.ExitCode()
}
