//go:build integration

package updates

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// TestRolloutWaitsForTheTrial: a rollout offers version 2 while the
// always_on agent runs another build on trial (version 1, put on trial by
// hand, whose health command fails while a marker file exists). The
// agent verifies the offer and reports it waiting for the trial (outcome
// waiting, reason trial), not refused: the rollout keeps it pending. Once
// the marker is gone the trial ends at a later start, the agent installs
// the offered build, restarts into it, and the rollout counts it
// installed with no refusal. Before, the install was refused ("install:
// slots: a slot is on trial") and the rollout offered nothing more.
func TestRolloutWaitsForTheTrial(t *testing.T) {
	w := newRolloutWorld(t)
	marker := filepath.Join(w.dir, "unhealthy")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(w.dir, "plot-4", "update", "meta", "root.json")
	d := w.deviceWith(t, "plot-4", "always_on", map[string]any{"update": map[string]any{"version": 1, "budgetBytes": 64 << 20,
		"trialStarts": 2, "trialDeadline": "20s", "healthCommand": []string{"/bin/sh", "-c", "test ! -e " + marker}}})
	if _, err := os.Stat(root); err != nil {
		t.Fatal(err)
	}
	d.install(v1, "1")
	p, v, slot, _ := d.boot()
	if v != v1 || slot != "a" || p.wait(t, trialRE) == nil {
		t.Fatalf("the first start runs %s from slot %q, want build 1 on trial in a:\n%s", v, slot, p.log())
	}
	p.wait(t, regexp.MustCompile(`msg="update check" .*outcome=verified .*rollout=""`))
	w.start(t)
	if p.wait(t, regexp.MustCompile(`msg="update check" .*outcome=waiting .*rollout=r1 reason=trial`)) == nil {
		t.Fatalf("no update check waiting for the trial:\n%s", p.log())
	}
	r := w.await(t, func(c operatorapi.RolloutCounts) bool { return c.Pending == 1 }, p.log)
	if r.Counts.Refused != 0 || r.Counts.Installed != 0 {
		t.Fatalf("rollout r1 while the device waits for its trial: %+v; want it pending", r.Counts)
	}
	os.Remove(marker) // the next start of build 1 proves itself
	<-p.done          // the trial deadline ended the first start
	p, v, slot, _ = d.boot()
	if v != v1 || slot != "a" {
		t.Fatalf("the second start runs %s from slot %q:\n%s", v, slot, p.log())
	}
	if m := p.wait(t, putOnTrialRE); m == nil || m[1] != w.target || m[2] != "2" {
		t.Fatalf("no install of the offer after the trial:\n%s", p.log())
	}
	<-p.done
	if code := p.cmd.ProcessState.ExitCode(); code != 75 {
		t.Fatalf("after the install the agent exited with %d; want 75 (restart):\n%s", code, p.log())
	}
	p, v, slot, _ = d.boot()
	if v != v2 || slot != "b" || p.wait(t, installedRE) == nil {
		t.Fatalf("after the install the unit runs %s from slot %q:\n%s", v, slot, p.log())
	}
	r = w.awaitInstalled(t, 1, p.log)
	if r.Counts.Refused != 0 || r.Counts.Pending != 0 {
		t.Errorf("rollout r1: %+v; want the device installed, no refusal", r.Counts)
	}
	p.stop(t)
	if strings.Contains(p.log(), "outcome=refused") {
		t.Errorf("an update check was refused:\n%s", p.log())
	}
}
