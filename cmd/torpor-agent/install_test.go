package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/runtime/update/slots"
)

// TestHandOffInstallsUnderTheSignedVersion: the hand-off puts a verified
// build on trial in a real slots directory under its target's signed
// version, which is then the version the update check runs with in that
// slot (on trial and once active); the packaged build checks with the
// file's version, and a slot installed by hand under another name too. A
// second hand-off during the trial is refused.
func TestHandOffInstallsUnderTheSignedVersion(t *testing.T) {
	dir := t.TempDir()
	build := filepath.Join(dir, "build")
	if err := os.WriteFile(build, []byte("#!/bin/sh\nexit 0\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	s := slots.New(filepath.Join(dir, "slots"), nil)
	h := hand(s, slots.TrialOptions{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := h(build, update.Result{Target: "torpor-agent/7/linux-armv6", Custom: update.Custom{Version: 7}, Rollout: "r1"}); err != nil {
		t.Fatal(err)
	}
	st, err := s.Load()
	if err != nil || st.Trial == nil || st.Trial.Slot != "a" || st.Trial.Version != "7" {
		t.Fatalf("after the hand-off: %+v, %v; want slot a on trial as version 7", st, err)
	}
	if v := running(s, "a", 1); v != 7 {
		t.Errorf("the build on trial checks as version %d; want 7", v)
	}
	if v := running(s, slots.Base, 1); v != 1 {
		t.Errorf("the packaged build checks as version %d; want the file's 1", v)
	}
	if err := h(build, update.Result{Target: "torpor-agent/8/linux-armv6", Custom: update.Custom{Version: 8}}); err == nil {
		t.Error("a second hand-off during the trial was taken")
	}
	if _, err := s.Confirm("a"); err != nil {
		t.Fatal(err)
	}
	if v := running(s, "a", 1); v != 7 {
		t.Errorf("the active slot checks as version %d; want 7", v)
	}
	if err := s.Install(build, "1.4.0", "1.0.0", slots.TrialOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := running(s, "b", 3); v != 3 {
		t.Errorf("a slot installed by hand as 1.4.0 checks as version %d; want the file's 3", v)
	}
}
