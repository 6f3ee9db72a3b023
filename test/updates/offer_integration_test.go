//go:build integration

package updates

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// offerScale is the relay's and the agents' clock in the rollout tests:
// an hour in 6 s, so an always_on agent's hourly pulse and a sleeping
// agent's next window come within seconds.
const offerScale = "600"

// rolloutWorld is a relay on the compressed clock hosting the owner's
// repository, into which the owner signed the v2 build of this tree as
// version 2 of the agent for this machine (gzip-compressed) and published
// it; target is its TUF name and sum its SHA-256 as signed.
type rolloutWorld struct {
	*world
	epoch, target, sum string
}

func newRolloutWorld(t *testing.T) *rolloutWorld { return newRolloutWorldOf(t, v2) }

// newRolloutWorldOf is newRolloutWorld with build (v2, crash or hang)
// signed as version 2, with sign-target's extra flags.
func newRolloutWorldOf(t *testing.T, build string, extra ...string) *rolloutWorld {
	epoch := time.Now().UTC().Format(time.RFC3339Nano)
	w := &rolloutWorld{world: newWorld(t, "--time-scale", offerScale, "--time-epoch", epoch), epoch: epoch,
		target: "torpor-agent/2/linux-" + goruntime.GOARCH}
	ctl(t, append([]string{"update", "sign-target", "--dir", w.owner, "--name", w.target, "--version", "2",
		"--goarch", goruntime.GOARCH, "--goarm", "", "--gzip"}, append(extra, bin(t, build))...)...)
	ctl(t, "update", "publish", "--dir", w.owner, "--relay", w.relay.URL, "--key", w.opKey, "--root", "1", "--time-scale", offerScale)
	w.sum = testenv.SignedSHA256(t, w.owner, w.target)
	return w
}

// device is an agent installed as the .deb installs it (the v1 build is
// the packaged binary, started with --slot-launch), its configuration
// turning the update check on at version 1 with the owner's first root,
// linked to w's relay in mode on the compressed clock.
func (w *rolloutWorld) device(t *testing.T, name, mode string) *device {
	t.Helper()
	return w.deviceWith(t, name, mode, nil)
}

// deviceWith is device with the configuration's members extra added.
func (w *rolloutWorld) deviceWith(t *testing.T, name, mode string, extra map[string]any) *device {
	t.Helper()
	dir := filepath.Join(w.dir, name)
	key, conf := filepath.Join(w.dir, name+".key"), filepath.Join(w.dir, name+".json")
	keygen(t, key)
	root, err := os.ReadFile(filepath.Join(w.owner, "1.root.json"))
	if err == nil {
		err = os.MkdirAll(filepath.Join(dir, "update", "meta"), 0o700)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "update", "meta", "root.json"), root, 0o600)
	}
	c := map[string]any{"version": 1, "update": map[string]any{"version": 1, "budgetBytes": 64 << 20,
		"trialStarts": 2, "trialDeadline": trialDeadline.String()}}
	maps.Copy(c, extra)
	b, _ := json.Marshal(c)
	if err == nil {
		err = os.WriteFile(conf, b, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &device{t: t, dir: w.dir, data: dir, flags: []string{"--config", conf, "--key", key, "--data-dir", dir,
		"--relay", w.relay.URL, "--mode", mode, "--name", name, "--purposes", "comms:*", "--handler", "*=exec:/bin/true",
		"--time-scale", offerScale, "--time-epoch", w.epoch}}
}

// rollout runs torporctl update rollout as the relay's operator.
func (w *rolloutWorld) rollout(t *testing.T, args ...string) string {
	t.Helper()
	return ctl(t, append([]string{"update", "rollout", "--relay", w.relay.URL, "--key", w.opKey, "--time-scale", offerScale}, args...)...)
}

// start starts rollout r1 of version 2 over every device of the relay,
// in one wave.
func (w *rolloutWorld) start(t *testing.T) {
	t.Helper()
	out := w.rollout(t, "start", "r1", "--target", w.target, "--version", "2", "--sha256", w.sum, "--waves", "100")
	if !strings.Contains(out, "0 installed") {
		t.Fatalf("rollout start:\n%s", out)
	}
}

// awaitInstalled returns rollout r1's status once it counts n devices
// installed; a minute without fails the test.
func (w *rolloutWorld) awaitInstalled(t *testing.T, n int, logs func() string) operatorapi.Rollout {
	t.Helper()
	return w.await(t, func(c operatorapi.RolloutCounts) bool { return c.Installed >= n }, logs)
}

// await returns rollout r1's status once its counts satisfy done; a
// minute without fails the test.
func (w *rolloutWorld) await(t *testing.T, done func(operatorapi.RolloutCounts) bool, logs func() string) operatorapi.Rollout {
	t.Helper()
	limit := time.Now().Add(time.Minute)
	for {
		var r operatorapi.Rollout
		out := w.rollout(t, "--json", "status", "r1")
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("rollout status --json: %v\n%s", err, out)
		}
		if done(r.Counts) {
			return r
		}
		if time.Now().After(limit) {
			t.Fatalf("rollout r1 after a minute: %s\nthe device:\n%s", out, logs())
		}
		time.Sleep(200 * time.Millisecond) // polling the relay, not waiting for the agent's time
	}
}

var (
	putOnTrialRE = regexp.MustCompile(`msg="update put on trial" .*target=(\S+) version=(\S+) rollout=r1`)
	offeredRE    = regexp.MustCompile(`msg="update check" .*outcome=verified .*rollout=r1`)
)

// takeOffer follows the device from the start p that was offered the
// target: it installs it into a slot and exits to restart (status 75), the
// unit's restart runs v2 from slot a on trial, which proves itself, and
// the rollout counts the device installed.
func (w *rolloutWorld) takeOffer(t *testing.T, d *device, p *proc) {
	t.Helper()
	if m := p.wait(t, putOnTrialRE); m == nil || m[1] != w.target || m[2] != "2" {
		t.Fatalf("no install of the offer:\n%s", p.log())
	}
	if p.wait(t, offeredRE) == nil {
		t.Fatalf("the install was not of the offered target:\n%s", p.log())
	}
	<-p.done
	if code := p.cmd.ProcessState.ExitCode(); code != 75 {
		t.Fatalf("after the install the agent exited with %d; want 75 (restart):\n%s", code, p.log())
	}
	if !strings.Contains(p.log(), `msg=restarting component=agent why="update `+w.target+` installed"`) {
		t.Errorf("no restart logged:\n%s", p.log())
	}
	p, v, slot, failed := d.boot()
	if v != v2 || slot != "a" || len(failed) != 0 || p.wait(t, trialRE) == nil {
		t.Fatalf("after the install the unit runs %s from slot %q after %d failed starts:\n%s", v, slot, len(failed), p.log())
	}
	if m := p.wait(t, installedRE); m == nil || m[2] != "2" || m[3] != v1 {
		t.Fatalf("the trial did not prove itself:\n%s", p.log())
	}
	r := w.awaitInstalled(t, 1, p.log)
	if r.Counts.Pending != 0 || r.Counts.RolledBack != 0 || r.State != "done" {
		t.Errorf("rollout r1: %+v; want done, the device installed", r)
	}
	if st := d.state(); st.Active != "a" || st.ActiveVersion != "2" || st.Trial != nil {
		t.Errorf("the slots after the trial: %+v", st)
	}
	// The new build, restarted, runs version 2 and is offered nothing.
	p.stop(t)
	p, v, slot, _ = d.boot()
	if v != v2 || slot != "a" {
		t.Fatalf("the next start runs %s from slot %q", v, slot)
	}
	p.stop(t)
}

// TestRolloutInstallsOnAwakeAgent: an always_on agent of version 1
// (stamped 1.0.0) under the slot launcher verifies the published version
// 2 but installs nothing until torporctl starts a rollout of it; at its
// next publish (the hourly pulse, seconds on the compressed clock) the
// relay offers it, and it installs it, restarts into the v2 build
// (stamped 2.0.0) for its trial boot, proves it, and the rollout counts
// it installed.
func TestRolloutInstallsOnAwakeAgent(t *testing.T) {
	w := newRolloutWorld(t)
	d := w.device(t, "plot-1", "always_on")
	p, v, _, _ := d.boot()
	if v != v1 {
		t.Fatalf("the packaged build runs %s", v)
	}
	p.wait(t, regexp.MustCompile(`msg="update check" .*outcome=verified target=`+regexp.QuoteMeta(w.target)+` version=2 rollout=""`))
	if strings.Contains(p.log(), "put on trial") {
		t.Fatalf("installed without an offer:\n%s", p.log())
	}
	w.start(t)
	w.takeOffer(t, d, p)
}

// TestRolloutInstallsOnSleepingAgent: an hourly_wake agent of version 1
// links at boot and sleeps; the rollout started meanwhile offers it the
// build at its next window's wake, and it installs it as the awake one
// does.
func TestRolloutInstallsOnSleepingAgent(t *testing.T) {
	w := newRolloutWorld(t)
	d := w.device(t, "sleeper", "hourly_wake")
	p, _, _, _ := d.boot()
	p.wait(t, regexp.MustCompile(`msg=wake .*reason=boot`)) // the boot wake ended: asleep
	w.start(t)
	w.takeOffer(t, d, p)
	log := p.log()
	wakes := regexp.MustCompile(`msg=waking .*reason=(\S+)`).FindAllStringSubmatch(log[:strings.Index(log, "put on trial")], -1)
	if len(wakes) < 2 || wakes[len(wakes)-1][1] == "boot" {
		t.Errorf("the offer was not taken at a wake after the boot wake (%q):\n%s", wakes, log)
	}
}

// TestRolloutCountsARollback: the build a rollout offers exits at start
// (testdata/crash, signed as version 2). The always_on agent installs it
// and restarts; both trial starts fail, the launcher brings the packaged
// v1 back, and its signed status's install member says rolled-back,
// which the rollout counts (a failure) with the launcher's reason; the
// relay offers it nothing more, so v1 keeps running.
func TestRolloutCountsARollback(t *testing.T) {
	w := newRolloutWorldOf(t, crash)
	d := w.device(t, "plot-2", "always_on")
	p, _, _, _ := d.boot()
	p.wait(t, regexp.MustCompile(`msg="update check" .*outcome=verified .*rollout=""`))
	w.start(t)
	if m := p.wait(t, putOnTrialRE); m == nil {
		t.Fatalf("no install of the offer:\n%s", p.log())
	}
	<-p.done
	p, v, slot, failed := d.boot()
	if v != v1 || slot != "" || len(failed) != 2 || p.wait(t, rolledRE) == nil {
		t.Fatalf("after the broken build: %s from slot %q after %d failed starts:\n%s", v, slot, len(failed), p.log())
	}
	r := w.await(t, func(c operatorapi.RolloutCounts) bool { return c.RolledBack == 1 }, p.log)
	if r.Counts.Installed != 0 || r.Counts.Pending != 0 || len(r.Failures) != 1 || r.Failures[0].Outcome != "rolled-back" ||
		!strings.Contains(r.Failures[0].Reason, "exited with status 2") {
		t.Fatalf("rollout r1 after the rollback: %+v", r)
	}
	if st := d.state(); st.Trial != nil || st.Outcome == nil || st.Outcome.Result != "rolled-back" || st.Outcome.Version != "2" {
		t.Errorf("the slots after the rollback: %+v", st)
	}
	p.stop(t)
	if strings.Contains(p.log(), "put on trial") {
		t.Errorf("the rolled-back build was installed again:\n%s", p.log())
	}
}
