package runtime_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/runtime/update/slots"
	"github.com/torpor-dev/torpor/wake"
)

// TestStatusCarriesUpdateOutcome: a build rolled back by the launcher (a
// real slots directory, its trial's single start used up) is in the
// signed status the relay verifies and keeps, with why.
func TestStatusCarriesUpdateOutcome(t *testing.T) {
	dir := t.TempDir()
	s := slots.New(filepath.Join(dir, "slots"), nil)
	bin := filepath.Join(dir, "torpor-agent-2")
	if err := os.WriteFile(bin, []byte("build 2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Install(bin, "2.0.0", "1.0.0", slots.TrialOptions{Starts: 1}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Launch("1.0.0")
	if err != nil || !p.Trial {
		t.Fatalf("%+v, %v", p, err)
	}
	if err := s.Fail(p.Slot, "exited with status 2"); err != nil {
		t.Fatal(err)
	}
	if p, err = s.Launch("1.0.0"); err != nil || p.RolledBack == nil {
		t.Fatalf("%+v, %v", p, err)
	}
	w := newWorld(t, wake.HourlyWake)
	w.cfg.Status.Install = s.Status
	w.bootSuspending()
	u := w.status().Install
	if u == nil || u.Result != "rolled-back" || u.Version != "2.0.0" || u.From != "1.0.0" || !strings.Contains(u.Reason, "exited with status 2") {
		t.Fatalf("the status's update = %+v", u)
	}
	w.shutdown()
}
