package runtime_test

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"testing"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/internal/tufsign"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/store/updaterepo"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
)

// updateRepo is a relay's update repository holding build as version 2
// of the agent for armv6, and the owner's root it trusts.
func updateRepo(t *testing.T, clk *clocktest.Clock, build []byte) (*updaterepo.Repo, []byte) {
	return updateRepoWith(t, clk, build, update.Custom{Version: 2, GOARCH: "arm", GOARM: "6"})
}

// updateRepoWith is updateRepo with the target's custom fields cu.
func updateRepoWith(t *testing.T, clk *clocktest.Clock, build []byte, cu update.Custom) (*updaterepo.Repo, []byte) {
	repo, root, publish := updateRepoPublisher(t, clk, nil)
	publish(map[string][]byte{"torpor-agent/2/linux-armv6": build}, cu)
	return repo, root
}

// updateRepoPublisher is a repository and the root it trusts, and a
// function that publishes the next targets version with files added
// under their names with the custom fields cu; build, when not nil, is
// published first as version 2 of the agent for armv6.
func updateRepoPublisher(t *testing.T, clk *clocktest.Clock, build []byte) (*updaterepo.Repo, []byte, func(map[string][]byte, update.Custom)) {
	k := map[string]ed25519.PrivateKey{}
	p := map[string]ed25519.PublicKey{}
	for _, role := range []string{"root", "targets", "snapshot", "timestamp"} {
		p[role], k[role], _ = ed25519.GenerateKey(nil)
	}
	root, _ := tufsign.NewRoot(tufsign.Roles{Root: []ed25519.PublicKey{p["root"]}, RootThreshold: 1,
		Targets: []ed25519.PublicKey{p["targets"]}, TargetsThreshold: 1, Snapshot: p["snapshot"], Timestamp: p["timestamp"]},
		t0.AddDate(1, 0, 0))
	rootBytes, _ := tufsign.Sign(root, k["root"])
	repo, err := updaterepo.Open(updaterepo.Config{Path: filepath.Join(t.TempDir(), "updates.db"),
		Snapshot: k["snapshot"], Timestamp: k["timestamp"], Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { repo.Close() })
	if err := repo.SetRoot(rootBytes); err != nil {
		t.Fatal(err)
	}
	targets := metadata.Targets(t0.AddDate(0, 3, 0))
	targets.Signed.Version = 0
	publish := func(files map[string][]byte, cu update.Custom) {
		t.Helper()
		for name, b := range files {
			tufsign.AddTarget(targets, name, b, update.CustomKey, cu)
			if _, err := repo.AddBlob(b); err != nil {
				t.Fatal(err)
			}
		}
		targets.Signed.Version++
		tb, _ := tufsign.Sign(targets, k["targets"])
		if err := repo.Publish(tb); err != nil {
			t.Fatal(err)
		}
	}
	if build != nil {
		publish(map[string][]byte{"torpor-agent/2/linux-armv6": build}, update.Custom{Version: 2, GOARCH: "arm", GOARM: "6"})
	}
	return repo, rootBytes, publish
}

// TestWakeChecksForUpdates: a wake linked to a relay that hosts an update
// repository, without a rollout's offer, fetches the build for its
// hardware over the link and verifies it, and says so in its signed
// status, but does not install it (OnVerified is for offered targets); a
// device of other hardware says why it installs nothing.
func TestWakeChecksForUpdates(t *testing.T) {
	build := bytes.Repeat([]byte{7}, 200_000)
	clk := clocktest.New(t0)
	repo, root := updateRepo(t, clk, build)
	for _, tc := range []struct {
		device  update.Device
		outcome string
		reason  string
	}{
		{update.Device{GOARCH: "arm", GOARM: "6"}, wire.UpdateVerified, ""},
		{update.Device{GOARCH: "arm64"}, wire.UpdateRefused, string(update.Hardware)},
	} {
		w := newWorldWith(t, wake.HourlyWake, relay.Config{Stores: relay.Stores{Updates: repo}})
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "meta"), 0o700)
		os.WriteFile(filepath.Join(dir, "meta", "root.json"), root, 0o600)
		installs := 0
		w.cfg.Relay.Updates = &runtime.Updates{Dir: dir, Installed: 1, Device: tc.device,
			OnVerified: func(string, update.Result) error { installs++; return nil }}
		w.bootSuspending()
		st := w.status().Update
		if st == nil || st.Outcome != tc.outcome || st.Reason != tc.reason {
			t.Fatalf("%+v: the status's update = %+v; want %s %s", tc.device, st, tc.outcome, tc.reason)
		}
		if tc.outcome == wire.UpdateVerified && (st.Version != 2 || st.Bytes != int64(len(build))) {
			t.Errorf("verified: status %+v", st)
		}
		if installs != 0 {
			t.Errorf("%+v: a target no rollout offered was handed on to install", tc.device)
		}
		w.shutdown()
	}
}
