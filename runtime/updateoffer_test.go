package runtime_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/store/rollouts"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/transport/relay/rollout"
	"github.com/torpor-dev/torpor/wake"
)

// offerWorld is an always_on agent at version 1 whose relay hosts build
// as version 2 and runs rollout r1 offering it to the agent (version is
// the offer's), with install as its OnVerified.
func offerWorld(t *testing.T, build []byte, version string, install func(string, update.Result) error) (*world, *rollout.Manager) {
	w, m, start := offerWorldLater(t, build, version, install)
	start()
	return w, m
}

// offerWorldLater is offerWorld with the rollout started when the test
// calls start.
func offerWorldLater(t *testing.T, build []byte, version string, install func(string, update.Result) error) (*world, *rollout.Manager, func()) {
	clk := clocktest.New(t0)
	repo, root := updateRepo(t, clk, build)
	st, err := rollouts.OpenBolt(filepath.Join(t.TempDir(), "rollouts.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w := newWorldWith(t, wake.AlwaysOn, relay.Config{Stores: relay.Stores{Updates: repo, Rollouts: st}})
	m := &rollout.Manager{Store: st, Clock: w.clock}
	sum := sha256.Sum256(build)
	spec := rollout.Spec{ID: "r1", Target: rollout.Target{Name: "torpor-agent/2/linux-armv6", Version: version, SHA256: hex.EncodeToString(sum[:])},
		Percents: []int{100}}
	start := func() {
		if _, err := m.Start(context.Background(), spec, []rollout.Device{{ID: w.key.DID().String()}}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "meta"), 0o700)
	os.WriteFile(filepath.Join(dir, "meta", "root.json"), root, 0o600)
	w.cfg.Relay.Updates = &runtime.Updates{Dir: dir, Installed: 1, Device: update.Device{GOARCH: "arm", GOARM: "6"}, OnVerified: install}
	w.newAgent()
	return w, m, start
}

// TestWakeInstallsTheOffer: an always_on agent offered a build by a
// rollout fetches and verifies exactly that target, hands the verified
// file to OnVerified, and then, rather than staying live, ends the wake
// (its status says verified) and Run returns ErrRestart with the store
// closed, so that the new build starts.
func TestWakeInstallsTheOffer(t *testing.T) {
	build := bytes.Repeat([]byte{9}, 150_000)
	var got []byte
	var res update.Result
	w, _ := offerWorld(t, build, "2", func(path string, r update.Result) error {
		got, _ = os.ReadFile(path)
		res = r
		return nil
	})
	w.run()
	w.nextWake()
	if err := <-w.done; !errors.Is(err, runtime.ErrRestart) {
		t.Fatalf("Run after an install = %v; want ErrRestart", err)
	}
	if !bytes.Equal(got, build) || res.Rollout != "r1" || res.Custom.Version != 2 {
		t.Fatalf("installed %d bytes, %+v; want the offered build of rollout r1", len(got), res)
	}
	if st := w.status().Update; st == nil || st.Outcome != wire.UpdateVerified || st.Target != "torpor-agent/2/linux-armv6" {
		t.Errorf("the status's update = %+v; want verified", st)
	}
	w.newAgent() // the store was closed: a new agent opens it
}

// TestLiveWakeTakesALaterOffer: an always_on agent linked before the
// rollout started is offered the build in the answer to its next publish
// within the wake (here a restated status; the hourly pulse alike), checks
// again at once and installs it, and restarts. A message delivered in the
// wake was acknowledged before the restart: the restarted agent (its store
// closed and opened again) does not get it again.
func TestLiveWakeTakesALaterOffer(t *testing.T) {
	build := bytes.Repeat([]byte{3}, 80_000)
	var res update.Result
	w, _, start := offerWorldLater(t, build, "2", func(_ string, r update.Result) error { res = r; return nil })
	w.run()
	w.waitPhase(runtime.PhaseUpdate)
	if st := w.awaitUpdate(); st.Outcome != wire.UpdateVerified {
		t.Fatalf("before the rollout: %+v; want verified, not installed", st)
	}
	alice := runtimetest.Key(t, 1)
	if status, _ := w.send(alice, runtimetest.Object(t, alice, "comms:message", t0, 2*time.Hour, nil)); status/100 != 2 {
		t.Fatalf("send to the live agent: %d", status)
	}
	w.await("the message delivered", func() bool { return len(w.rec.IDs()) == 1 })
	start()
	w.agent.StatusChanged()
	if err := <-w.done; !errors.Is(err, runtime.ErrRestart) {
		t.Fatalf("Run after a later offer = %v; want ErrRestart", err)
	}
	if res.Rollout != "r1" || res.Target != "torpor-agent/2/linux-armv6" {
		t.Errorf("installed %+v; want rollout r1's target", res)
	}
	if st, _ := w.queue.Stats(context.Background(), w.key.DID().String(), w.clock.Now()); st.Messages != 0 {
		t.Errorf("the relay holds %d records after the restart; want the message acknowledged", st.Messages)
	}
	w.cfg.Relay.Updates = nil // the new build, here without updates
	w.newAgent()
	w.run()
	w.waitPhase(runtime.PhaseDrain)
	w.shutdown()
	if got := w.rec.IDs(); len(got) != 1 {
		t.Errorf("%d deliveries after the restart; want only the one before it", len(got))
	}
}

// TestOfferRefused: an offer whose version is not the one the owner signed
// is refused (not-offered) and nothing is installed; a verified offer with
// no way to install it (no OnVerified: no A/B slots) says so (install).
// Either refusal reaches the rollout as the device's outcome, and the
// always_on agent stays live.
func TestOfferRefused(t *testing.T) {
	build := bytes.Repeat([]byte{5}, 50_000)
	for _, tc := range []struct {
		version string
		install func(string, update.Result) error
		reason  update.Code
	}{
		{"3", func(string, update.Result) error { t.Error("installed a refused offer"); return nil }, update.Offered},
		{"2", nil, update.Install},
	} {
		w, m := offerWorld(t, build, tc.version, tc.install)
		w.run()
		w.waitPhase(runtime.PhaseUpdate)
		// The live wake publishes the outcome at once, not at its end.
		if st := w.awaitUpdate(); st.Outcome != wire.UpdateRefused || st.Reason != string(tc.reason) {
			t.Fatalf("offer of version %s: the status's update = %+v; want refused %s", tc.version, st, tc.reason)
		}
		// The relay records the outcome after it stored the state.
		var res rollout.Result
		w.await("the refusal in the rollout", func() bool {
			r, err := m.Get(context.Background(), "r1")
			if err != nil {
				t.Fatal(err)
			}
			res = r.Results[w.key.DID().String()]
			return res.Outcome != ""
		})
		if res.Outcome != rollout.Refused || !strings.Contains(res.Reason, string(tc.reason)) {
			t.Errorf("offer of version %s: the rollout has %+v; want refused, %s", tc.version, res, tc.reason)
		}
		w.shutdown()
	}
}

// awaitUpdate returns the update member of the status the relay keeps,
// once it has one: the agent publishes it beside the test (no time passes
// on the agent's clock meanwhile).
func (w *world) awaitUpdate() *wire.StatusUpdate {
	w.t.Helper()
	var u *wire.StatusUpdate
	w.await("a status with an update outcome at the relay", func() bool {
		s, err := w.states.Get(context.Background(), w.key.DID().String())
		if err == nil && s.Status != nil {
			if st, err := relay.ParseStatus(s.Status, w.key.DID()); err == nil {
				u = st.Update
			}
		}
		return u != nil
	})
	return u
}

// await yields until done reports true, failing after 10 s of real time:
// what it waits for happens beside the test, not on the agent's clock.
func (w *world) await(what string, done func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			w.t.Fatalf("no %s", what)
		}
		goruntime.Gosched()
	}
}
