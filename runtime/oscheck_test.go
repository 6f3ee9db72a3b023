package runtime_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/runtime/update/rauc"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// fakeRauc is a rauc command line that copies the bundle it is asked to
// install beside itself and exits as the file "exit" says, printing a
// LastError line as rauc does when it fails. test/updates runs the real
// rauc (TestRaucInstall); this one shows the wake's side.
const fakeRauc = `#!/bin/sh
d=$(dirname "$0")
echo "$@" >> "$d/calls"
cp "$2" "$d/installed"
code=$(cat "$d/exit" 2>/dev/null || echo 0)
[ "$code" = 0 ] || echo "LastError: signature verification failed"
exit "$code"
`

// TestWakeHandsBundleToRauc: a repository with a build of the agent and
// an operating-system bundle (type rauc-bundle): the wake's checks
// verify both; the build, which no rollout offered, is kept (not handed
// to OnVerified) and the bundle goes to rauc install; the status carries the bundle's check and rauc's outcome
// (installed, version 4). The next wake finds the bundle installed (up to
// date). A newer bundle rauc fails is reported failed with rauc's reason,
// and not handed to rauc again at the next wake.
func TestWakeHandsBundleToRauc(t *testing.T) {
	clk := clocktest.New(t0)
	build, bundle := bytes.Repeat([]byte{7}, 30_000), bytes.Repeat([]byte("bundle"), 20_000)
	repo, root, publish := updateRepoPublisher(t, clk, build)
	cu := update.Custom{Version: 4, GOARCH: "arm", GOARM: "6", Type: update.TypeRauc}
	publish(map[string][]byte{"os/4/rpi": bundle}, cu)
	tools := t.TempDir()
	os.WriteFile(filepath.Join(tools, "rauc"), []byte(fakeRauc), 0o755)
	in, _ := rauc.New(rauc.Config{Command: filepath.Join(tools, "rauc"), State: filepath.Join(t.TempDir(), "rauc.json")})
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "meta"), 0o700)
	os.WriteFile(filepath.Join(dir, "meta", "root.json"), root, 0o600)
	inst := &installs{}
	w := newWorldWith(t, wake.HourlyWake, relayWithUpdates(repo))
	w.cfg.Relay.Updates = &runtime.Updates{Dir: dir, Installed: 1, Device: update.Device{GOARCH: "arm", GOARM: "6"},
		OnVerified: inst.installErr, Rauc: in}
	wakeOnce := func() wire.Status {
		w.bootSuspending()
		st := w.status()
		w.shutdown()
		return st
	}
	st := wakeOnce()
	got, _ := os.ReadFile(filepath.Join(tools, "installed"))
	if len(inst.paths) != 0 || !bytes.Equal(got, bundle) {
		t.Fatalf("handed on %d builds, rauc got %d bytes; want no build (none was offered) and the bundle", len(inst.paths), len(got))
	}
	if u, o := st.OSUpdate, st.OSInstall; u == nil || u.Outcome != wire.UpdateVerified || u.Target != "os/4/rpi" ||
		o == nil || o.Result != wire.InstallInstalled || o.Version != "4" {
		t.Fatalf("status: OS check %+v, OS install %+v; want verified, installed 4", u, o)
	}
	if st := wakeOnce(); st.OSUpdate.Outcome != wire.UpdateUpToDate || st.OSInstall.Result != wire.InstallInstalled {
		t.Fatalf("the next wake: OS check %+v, install %+v; want up to date", st.OSUpdate, st.OSInstall)
	}

	os.WriteFile(filepath.Join(tools, "exit"), []byte("1"), 0o600)
	cu.Version = 5
	publish(map[string][]byte{"os/5/rpi": append(bundle, 5)}, cu)
	st = wakeOnce()
	if o := st.OSInstall; o == nil || o.Result != wire.InstallFailed || o.Version != "5" || !strings.Contains(o.Reason, "signature verification failed") {
		t.Fatalf("OS install %+v; want failed 5 with rauc's reason", o)
	}
	st = wakeOnce()
	calls, _ := os.ReadFile(filepath.Join(tools, "calls"))
	if n := strings.Count(string(calls), "install "); n != 2 || !strings.Contains(st.OSUpdate.Detail, "rauc failed this bundle before") {
		t.Fatalf("rauc ran %d times, OS check %+v; want twice, the failed bundle not again", n, st.OSUpdate)
	}
}
