package slots

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
)

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// build writes a stand-in build of version v under dir and returns its
// path: the slots copy and hash bytes, whatever they are.
func build(t *testing.T, dir, v string) string {
	t.Helper()
	p := filepath.Join(dir, "torpor-agent-"+v)
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho "+v+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// runs returns the version the launcher's plan p runs, read from the
// binary itself ("base" for the packaged one).
func runs(t *testing.T, p Plan) string {
	t.Helper()
	if p.Path == "" {
		return "base"
	}
	b, err := os.ReadFile(p.Path)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "#!/bin/sh\necho ")
	if !ok {
		t.Fatalf("slot %s holds %q, no complete build", p.Slot, b)
	}
	if p.Version != v {
		t.Fatalf("the plan says version %q, slot %s holds %q", p.Version, p.Slot, v)
	}
	return v
}

func newSlots(t *testing.T) (*Slots, string) {
	dir := t.TempDir()
	return New(filepath.Join(dir, "slots"), clocktest.New(t0)), dir
}

func TestInstallTrialConfirm(t *testing.T) {
	s, dir := newSlots(t)
	if p, err := s.Launch("base"); err != nil || runs(t, p) != "base" {
		t.Fatalf("before any install: %+v, %v", p, err)
	}
	if err := s.Install(build(t, dir, "2.0.0"), "2.0.0", "base", TrialOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Launch("base")
	if err != nil || !p.Trial || p.Slot != "a" || runs(t, p) != "2.0.0" || p.Deadline != DefaultDeadline {
		t.Fatalf("trial start: %+v, %v", p, err)
	}
	if err := s.Install(build(t, dir, "3.0.0"), "3.0.0", "1.0.0", TrialOptions{}); !errors.Is(err, ErrTrial) {
		t.Fatalf("install during a trial: %v", err)
	}
	if _, err := s.Confirm("b"); !errors.Is(err, ErrNotOnTrial) {
		t.Fatalf("confirm of the wrong slot: %v", err)
	}
	o, err := s.Confirm("a")
	if err != nil || o.Result != Installed || o.Version != "2.0.0" || o.From != "base" || !o.At.Equal(t0) {
		t.Fatalf("confirm: %+v, %v", o, err)
	}
	p, err = s.Launch("base")
	if err != nil || p.Trial || runs(t, p) != "2.0.0" {
		t.Fatalf("after the confirm: %+v, %v", p, err)
	}
	// The next install goes to the other slot and keeps 2.0.0 in a.
	if err := s.Install(build(t, dir, "3.0.0"), "3.0.0", "base", TrialOptions{Starts: 1, Deadline: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if p, _ = s.Launch("base"); p.Slot != "b" || runs(t, p) != "3.0.0" {
		t.Fatalf("second install: %+v", p)
	}
	if err := s.Fail("b", "exited with status 2"); err != nil {
		t.Fatal(err)
	}
	p, err = s.Launch("base")
	if err != nil || runs(t, p) != "2.0.0" || p.RolledBack == nil || p.RolledBack.From != "2.0.0" {
		t.Fatalf("rollback to a: %+v, %v", p, err)
	}
	st, _ := s.Load()
	if st.Outcome == nil || st.Outcome.Result != RolledBack || !strings.Contains(st.Outcome.Reason, "start 1: exited with status 2") {
		t.Fatalf("outcome: %+v", st.Outcome)
	}
	if u := s.Status(); u == nil || u.Result != "rolled-back" || u.Version != "3.0.0" || u.From != "2.0.0" || u.Reason != st.Outcome.Reason {
		t.Fatalf("status %+v", u)
	}
}

func TestRollbackAfterStartsUsedUp(t *testing.T) {
	s, dir := newSlots(t)
	if err := s.Install(build(t, dir, "2.0.0"), "2.0.0", "1.0.0", TrialOptions{Starts: 3}); err != nil {
		t.Fatal(err)
	}
	// Starts that never reach Fail (a power cut, a crash of the
	// launcher's host) count all the same.
	for i := range 3 {
		if p, err := s.Launch("1.0.0"); err != nil || !p.Trial {
			t.Fatalf("start %d: %+v, %v", i+1, p, err)
		}
	}
	p, err := s.Launch("1.0.0")
	if err != nil || runs(t, p) != "base" || p.Version != "1.0.0" || p.RolledBack == nil {
		t.Fatalf("fourth start: %+v, %v", p, err)
	}
	if r := p.RolledBack; r.Result != RolledBack || r.Version != "2.0.0" || r.From != "1.0.0" || !strings.Contains(r.Reason, "no proof in 3 starts") {
		t.Fatalf("outcome %+v", r)
	}
	if p, _ := s.Launch("1.0.0"); p.RolledBack != nil || p.Path != "" {
		t.Fatalf("after the rollback: %+v", p)
	}
}

func TestDamagedSlotRollsBack(t *testing.T) {
	s, dir := newSlots(t)
	if err := s.Install(build(t, dir, "2.0.0"), "2.0.0", "1.0.0", TrialOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path("a"), []byte("#!/bin/sh\necho 2.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := s.Launch("1.0.0")
	if err != nil || p.Path != "" || p.RolledBack == nil || !strings.Contains(p.RolledBack.Reason, "not the one installed") {
		t.Fatalf("%+v, %v", p, err)
	}
}

func TestBadInputRefused(t *testing.T) {
	s, dir := newSlots(t)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o755)
	if err := s.Install(empty, "2.0.0", "1.0.0", TrialOptions{}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty build: %v", err)
	}
	if err := s.Install(build(t, dir, "2"), "", "1.0.0", TrialOptions{}); err == nil {
		t.Fatal("install without a version")
	}
	if st, err := s.Load(); err != nil || st.Trial != nil {
		t.Fatalf("a refused install changed the state: %+v, %v", st, err)
	}
	for _, bad := range []string{`{"active":"c"}`, `{"active":"a","trial":{"slot":"a","maxStarts":1,"deadline":1}}`,
		`{"active":"","trial":{"slot":"b","maxStarts":0,"deadline":1}}`, `{"active":`} {
		os.WriteFile(filepath.Join(s.Dir, StateFile), []byte(bad), 0o600)
		if p, err := s.Launch("1.0.0"); err == nil || p.Path != "" {
			t.Errorf("state %s: %+v, %v", bad, p, err)
		}
	}
}

// TestPackageReplacedWins: after apt replaced the packaged build (the
// launcher has another version than the slots were installed under), the
// packaged build runs and the slots are dropped.
func TestPackageReplacedWins(t *testing.T) {
	s, dir := newSlots(t)
	must(t, s.Install(build(t, dir, "2.0.0"), "2.0.0", "1.0.0", TrialOptions{}))
	p, err := s.Launch("1.0.0")
	must(t, err)
	_, err = s.Confirm(p.Slot)
	must(t, err)
	// A second install made from the slot keeps the packaged version.
	must(t, s.Install(build(t, dir, "3.0.0"), "3.0.0", "2.0.0", TrialOptions{}))
	if st, _ := s.Load(); st.Base != "1.0.0" || st.Trial.From != "2.0.0" {
		t.Fatalf("state %+v", st)
	}
	if p, err = s.Launch("1.0.0"); err != nil || runs(t, p) != "3.0.0" {
		t.Fatalf("same package: %+v, %v", p, err)
	}
	p, err = s.Launch("1.5.0")
	if err != nil || runs(t, p) != "base" || p.Version != "1.5.0" || p.Replaced != "1.0.0" {
		t.Fatalf("new package: %+v, %v", p, err)
	}
	st, err := s.Load()
	if err != nil || st.Active != Base || st.Trial != nil || st.Base != "1.5.0" {
		t.Fatalf("after: %+v, %v", st, err)
	}
	if p, _ = s.Launch("1.5.0"); p.Replaced != "" || p.Path != "" {
		t.Fatalf("next start: %+v", p)
	}
}
