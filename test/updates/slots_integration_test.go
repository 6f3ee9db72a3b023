//go:build integration

package updates

import (
	"regexp"
	"strings"
	"testing"
)

var (
	installedRE = regexp.MustCompile(`msg="update installed" slot=(\S+) version=(\S+) from=(\S+)`)
	trialRE     = regexp.MustCompile(`msg="update on trial" slot=(\S+) version=(\S+)`)
	rolledRE    = regexp.MustCompile(`msg="update rolled back" version=(\S+) to=(\S+) reason="([^"]*)"`)
)

// TestInstallTrialRollback: the packaged v1 installs v2, which proves
// itself on its trial start (linked to a real relay and drained) and runs
// from its slot afterwards; then a build that exits at start and a build
// that hangs are each put on trial, fail their two starts and are rolled
// back by the launcher alone, to v2.
func TestInstallTrialRollback(t *testing.T) {
	d := newDevice(t)
	p, v, slot, _ := d.boot()
	if v != v1 || slot != "" {
		t.Fatalf("first boot runs %s from slot %q, want the packaged %s", v, slot, v1)
	}
	d.install(v2, v2)
	p.stop(t)
	p, v, slot, failed := d.boot()
	if v != v2 || slot != "a" || len(failed) != 0 || p.wait(t, trialRE) == nil {
		t.Fatalf("the trial start runs %s from slot %q after %d failed starts:\n%s", v, slot, len(failed), p.log())
	}
	if m := p.wait(t, installedRE); m == nil || m[2] != v2 || m[3] != v1 {
		t.Fatalf("no install confirmed:\n%s", p.log())
	}
	p.stop(t)
	if st := d.state(); st.Active != "a" || st.Trial != nil || st.Outcome == nil || st.Outcome.Result != "installed" {
		t.Fatalf("after the trial: %+v", st)
	}
	p, v, slot, _ = d.boot()
	if v != v2 || slot != "a" || strings.Contains(p.log(), "on trial") {
		t.Fatalf("after the install runs %s from slot %q:\n%s", v, slot, p.log())
	}
	p.stop(t)
	for _, tc := range []struct{ build, version, why string }{
		{crash, "3.0.0", "start 1: exited with status 2; start 2: exited with status 2"},
		{hang, "3.0.1", "start 1: no proof within 8s: killed; start 2: no proof within 8s: killed"},
	} {
		d.install(tc.build, tc.version)
		p, v, slot, failed = d.boot()
		if v != v2 || slot != "a" || len(failed) != 2 {
			t.Fatalf("%s: runs %s from slot %q after %d failed starts", tc.build, v, slot, len(failed))
		}
		if !strings.Contains(failed[0], tc.build+" build:") || !strings.Contains(failed[1], "slot=b version="+tc.version) {
			t.Fatalf("%s: the failed starts did not run it:\n%s", tc.build, failed)
		}
		m := p.wait(t, rolledRE)
		if m == nil || m[1] != tc.version || m[2] != v2 || !strings.Contains(m[3], tc.why) {
			t.Fatalf("%s: rollback %q, want reason %q:\n%s", tc.build, m, tc.why, p.log())
		}
		p.stop(t)
		if st := d.state(); st.Active != "a" || st.Trial != nil || st.Outcome.Result != "rolled-back" || st.Outcome.Version != tc.version {
			t.Fatalf("%s: after the rollback %+v", tc.build, st)
		}
		t.Logf("%s build %s rolled back: %s", tc.build, tc.version, m[3])
	}
}
