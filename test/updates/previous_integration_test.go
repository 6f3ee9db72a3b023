//go:build integration

package updates

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// TestPreviousReleaseAgentTakesARollout: the previous release's agent
// (testenv.PreviousRelease, built from git history and stamped 1.0.0),
// installed as a device in the field runs it (the packaged binary, started
// with --slot-launch), linked to this tree's relay while a rollout offers
// it this tree's build signed as version 2. It downloads and verifies the
// build over its link, installs it into a slot and restarts; its launcher
// starts the new build on trial, which proves itself, and the rollout
// counts the device installed (docs/upgrades.md, "Update offers"). The
// relay is this release's and the device's update client the previous
// one's: the way a fleet in the field reaches the new release.
func TestPreviousReleaseAgentTakesARollout(t *testing.T) {
	old := filepath.Join(testenv.BuildAtWith(t, testenv.PreviousRelease, testenv.BuildOptions{
		LDFlags: "-X github.com/torpor-dev/torpor/internal/version.stamp=" + v1,
	}, "torpor-agent"), "torpor-agent")
	w := newRolloutWorld(t)
	d := w.device(t, "old", "always_on")
	d.packaged = old
	p, v, _, _ := d.boot()
	if v != v1 {
		t.Fatalf("the previous release's build runs %s, want %s:\n%s", v, v1, p.log())
	}
	// Its first update check, with no offer yet, verifies the build and
	// installs nothing; by then the relay holds its state.
	p.wait(t, regexp.MustCompile(`msg="update check" .*outcome=verified target=`+regexp.QuoteMeta(w.target)+` version=2 rollout=""`))
	w.start(t)
	w.takeOffer(t, d, p)
}
