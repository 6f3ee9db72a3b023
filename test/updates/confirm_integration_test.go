//go:build integration

package updates

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// TestConfirmedBuildThroughTheBinaries: the owner signs the v2 build of
// this tree as a target that needs the owner's confirmation (torporctl
// update sign-target --confirm). The always_on agent of the v1 build,
// under the slot launcher and managed over the relay's broker, verifies
// it and holds it: nothing is installed, though no rollout is needed for
// a confirmed build. torporctl device confirm runs it: the agent installs
// it into a slot, ends its live wake and exits to restart (75), and the
// unit's restart runs v2 from slot a on trial, which proves itself.
func TestConfirmedBuildThroughTheBinaries(t *testing.T) {
	w := newRolloutWorldOf(t, v2, "--confirm")
	broker := w.relay.Wait(t, brokerRE)[1]
	d := w.deviceWith(t, "plot-c", "always_on",
		map[string]any{"mqtt": map[string]any{"broker": broker, "name": "plot-c", "operators": []string{w.opDID}}})
	p, v, _, _ := d.boot()
	if v != v1 {
		t.Fatalf("the packaged build runs %s", v)
	}
	key := p.wait(t, heldRE)
	if key == nil {
		t.Fatalf("the confirm target was not held:\n%s", p.log())
	}
	if strings.Contains(p.log(), "put on trial") {
		t.Fatalf("installed before the owner confirmed:\n%s", p.log())
	}
	dev := p.wait(t, regexp.MustCompile(`msg="torpor-agent starting" .*did=(did:key:\w+)`))[1]
	cmd := exec.Command(testenv.Binary(t, "torporctl"), "device", "confirm", "--broker", broker, "--key", w.opKey, "--did", dev, "plot-c", key[1])
	cmd.Env = append(os.Environ(), "TORPOR_KNOWN_DEVICES="+filepath.Join(t.TempDir(), "known"))
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("torporctl device confirm %q: %v\n%s\nthe agent:\n%s", key[1], err, out, p.log())
	}
	<-p.done
	if code := p.cmd.ProcessState.ExitCode(); code != 75 {
		t.Fatalf("after the confirmed install the agent exited with %d; want 75 (restart):\n%s", code, p.log())
	}
	p, v, slot, failed := d.boot()
	if v != v2 || slot != "a" || len(failed) != 0 || p.wait(t, trialRE) == nil {
		t.Fatalf("after the confirmed install the unit runs %s from slot %q after %d failed starts:\n%s", v, slot, len(failed), p.log())
	}
	if m := p.wait(t, installedRE); m == nil || m[2] != "2" || m[3] != v1 {
		t.Fatalf("the trial did not prove itself:\n%s", p.log())
	}
	p.stop(t)
}
