package rauc_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/runtime/update/rauc"
)

// script is a stand-in for the rauc command line that prints what the
// real one prints (test/updates' TestRaucInstall runs the real rauc), and
// records its arguments and the environment variable it is given.
const script = `#!/bin/sh
echo "$@ $DBUS_SYSTEM_BUS_ADDRESS" >> "$(dirname "$0")/calls"
case "$3" in
*good*) echo "installing"; echo "100% Installing done."; exit 0 ;;
*quiet*) exit 3 ;;
*) echo "100% Installing failed."; echo "LastError: signature verification failed: CMS"; exit 1 ;;
esac
`

func installer(t *testing.T) (*rauc.Installer, string) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "rauc"), []byte(script), 0o755)
	in, err := rauc.New(rauc.Config{Command: filepath.Join(dir, "rauc"), Args: []string{"--conf=/x.conf"},
		Env: []string{"DBUS_SYSTEM_BUS_ADDRESS=unix:path=/bus"}, State: filepath.Join(dir, "state.json"),
		Clock: clocktest.New(time.Date(2026, 12, 5, 21, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	return in, dir
}

// TestInstallOutcomes: exit 0 is installed and raises the installed
// version; a failure keeps rauc's LastError (or its exit status when it
// printed nothing) and leaves the installed version; the state survives a
// new Installer on the same file; a state file that does not decode is
// an error, never version 0.
func TestInstallOutcomes(t *testing.T) {
	in, dir := installer(t)
	ctx := context.Background()
	for _, tc := range []struct {
		bundle  string
		version uint64
		result  string
		reason  string
	}{
		{"good-4.raucb", 4, rauc.Installed, ""},
		{"bad-5.raucb", 5, rauc.Failed, "signature verification failed: CMS (exit status 1)"},
		{"quiet-6.raucb", 6, rauc.Failed, "rauc install: exit status 3"},
	} {
		o, err := in.Install(ctx, tc.bundle, "os", tc.version, "ab")
		if err != nil || o.Result != tc.result || o.Reason != tc.reason || o.Version != tc.version {
			t.Errorf("%s: %+v, %v; want %s %q", tc.bundle, o, err, tc.result, tc.reason)
		}
	}
	calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
	if !strings.HasPrefix(string(calls), "--conf=/x.conf install good-4.raucb unix:path=/bus\n") {
		t.Errorf("rauc was run as %q", calls)
	}
	again, _ := rauc.New(rauc.Config{State: filepath.Join(dir, "state.json")})
	s, err := again.State()
	if err != nil || s.Installed != 4 || s.Last == nil || s.Last.Version != 6 || s.Last.Result != rauc.Failed {
		t.Fatalf("state %+v, %v; want installed 4, the last outcome the failed 6", s, err)
	}
	os.WriteFile(filepath.Join(dir, "state.json"), []byte("{torn"), 0o600)
	if _, err := again.State(); err == nil {
		t.Fatal("a state that does not decode read as the zero state")
	}
	if _, err := again.Install(ctx, "good-7.raucb", "os", 7, ""); err == nil {
		t.Fatal("Install ran over a state it cannot read")
	}
}
