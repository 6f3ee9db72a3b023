package slots

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/clock/clocktest"
)

// scenario runs steps on s, whose file layer cuts the power somewhere.
type scenario func(t *testing.T, s *Slots, builds string)

// update installs 2.0.0 over 1.0.0 (in slot a) and confirms it at its
// first start.
func update(t *testing.T, s *Slots, builds string) {
	must(t, s.Install(filepath.Join(builds, "torpor-agent-2.0.0"), "2.0.0", "1.0.0", TrialOptions{Starts: 2}))
	p, err := s.Launch("base")
	must(t, err)
	_, err = s.Confirm(p.Slot)
	must(t, err)
	_, err = s.Launch("base")
	must(t, err)
}

// rollback installs 2.0.0 over 1.0.0, which fails both its starts and is
// rolled back.
func rollback(t *testing.T, s *Slots, builds string) {
	must(t, s.Install(filepath.Join(builds, "torpor-agent-2.0.0"), "2.0.0", "1.0.0", TrialOptions{Starts: 2}))
	for range 2 {
		p, err := s.Launch("base")
		must(t, err)
		must(t, s.Fail(p.Slot, "exited with status 1"))
	}
	_, err := s.Launch("base")
	must(t, err)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestPowerCutAtEveryStep cuts the power before every step of the file
// layer during an update and during a rollback, boots again on the real
// file layer and checks that the launcher runs exactly 1.0.0 or exactly
// 2.0.0, from a complete binary, and that the device then gets to the end
// the scenario would have reached: 2.0.0 confirmed, or 1.0.0 back.
func TestPowerCutAtEveryStep(t *testing.T) {
	for name, sc := range map[string]scenario{"update": update, "rollback": rollback} {
		for _, keep := range []bool{false, true} {
			cuts := 0
			for at := 1; ; at++ {
				if !cutRun(t, fmt.Sprintf("%s/keep%v/cut%d", name, keep, at), sc, at, keep) {
					break
				}
				cuts++
			}
			if cuts < 8 {
				t.Fatalf("%s: %d steps only", name, cuts)
			}
			t.Logf("%s (unsynced renames kept: %v): power cut at each of %d steps", name, keep, cuts)
		}
	}
}

// cutRun runs sc with the power cut before step at; false when sc ended
// before that step.
func cutRun(t *testing.T, name string, sc scenario, at int, keep bool) (wasCut bool) {
	t.Run(name, func(t *testing.T) {
		dir := t.TempDir()
		build(t, dir, "1.0.0")
		build(t, dir, "2.0.0")
		s := New(filepath.Join(dir, "slots"), clocktest.New(t0))
		must(t, s.Install(filepath.Join(dir, "torpor-agent-1.0.0"), "1.0.0", "base", TrialOptions{}))
		_, err := s.Confirm("a")
		must(t, err)
		f := newFaultFS(at, keep)
		s.fs = f
		func() {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(cut); !ok {
						panic(r)
					}
					wasCut = true
				}
			}()
			sc(t, s, dir)
		}()
		if !wasCut {
			return
		}
		afterCut(t, New(s.Dir, clocktest.New(t0)), name)
	})
	return wasCut
}

// afterCut boots the device after a cut, checks what runs and finishes
// the trial the way the scenario would.
func afterCut(t *testing.T, s *Slots, name string) {
	p, err := s.Launch("base")
	if err != nil {
		t.Fatalf("boot after the cut: %v", err)
	}
	v := runs(t, p)
	if v != "1.0.0" && v != "2.0.0" {
		t.Fatalf("runs %q", v)
	}
	for p.Trial {
		if strings.HasPrefix(name, "update/") {
			_, err = s.Confirm(p.Slot)
			must(t, err)
		} else {
			must(t, s.Fail(p.Slot, "exited with status 1"))
		}
		p, err = s.Launch("base")
		must(t, err)
		runs(t, p)
	}
	st, err := s.Load()
	must(t, err)
	if st.Trial != nil {
		t.Fatalf("a trial remains: %+v", st.Trial)
	}
}
