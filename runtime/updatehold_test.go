package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/gate"
	"github.com/torpor-dev/torpor/runtime/runtimetest"
	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/runtime/update/rauc"
	"github.com/torpor-dev/torpor/runtime/update/slots"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/ledger"
	"github.com/torpor-dev/torpor/store/updaterepo"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/wake"
)

// installs records what a held update's confirmation hands on.
type installs struct {
	paths [][]byte
	res   []update.Result
}

func (i *installs) install(path string, res update.Result) {
	b, _ := os.ReadFile(path)
	i.paths, i.res = append(i.paths, b), append(i.res, res)
}

func (i *installs) installErr(path string, res update.Result) error { i.install(path, res); return nil }

// holdPipe is an agent's pipeline on a real bbolt file, reopened at will
// as after a power cut, with a verified update file beside it.
type holdPipe struct {
	t     *testing.T
	dir   string
	clock *clocktest.Clock
	inst  *installs
	p     *runtime.Pipeline
	close func()
	res   update.Result
	build []byte
}

func newHoldPipe(t *testing.T) *holdPipe {
	h := &holdPipe{t: t, dir: t.TempDir(), clock: clocktest.New(t0), inst: &installs{}, build: bytes.Repeat([]byte("agent v2 "), 5000)}
	file := filepath.Join(h.dir, "verified-agent")
	if err := os.WriteFile(file, h.build, 0o600); err != nil {
		t.Fatal(err)
	}
	h.res = update.Result{Target: "torpor-agent/2/linux-armv6", Path: file, AwaitsConfirmation: true,
		Custom: update.Custom{Version: 2, GOARCH: "arm", GOARM: "6", Confirm: true},
		SHA256: strings.Repeat("ab", 32), Expires: t0.Add(72 * time.Hour)}
	h.open(true)
	t.Cleanup(func() { h.close() })
	return h
}

// open opens the pipeline, with an install when install is set (the
// running agent) and without one (torpor-agent's offline commands).
func (h *holdPipe) open(install bool) {
	h.t.Helper()
	db, err := store.Open(filepath.Join(h.dir, "agent.db"), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	pc := runtime.PipelineConfig{Key: runtimetest.Key(h.t, 8), Clock: h.clock}
	if install {
		pc.UpdateInstall = h.inst.installErr
	}
	p, err := runtime.OpenPipeline(db, pc)
	if err != nil {
		h.t.Fatal(err)
	}
	h.p, h.close = p, func() { p.Close(); db.Close() }
}

func (h *holdPipe) reopen(install bool) { h.close(); h.open(install) }

func (h *holdPipe) hold(verdict gate.Verdict, reason string) string {
	h.t.Helper()
	key, d, err := h.p.HoldUpdate(h.res, h.clock.Now())
	if err != nil || d.Verdict != verdict || d.Reason != reason {
		h.t.Fatalf("HoldUpdate = %s %v (%s), %v; want %v (%s)", key, d.Verdict, d.Reason, err, verdict, reason)
	}
	return key
}

func (h *holdPipe) holds() []gate.Held {
	h.t.Helper()
	hs, err := h.p.Holds()
	if err != nil {
		h.t.Fatal(err)
	}
	return hs
}

// TestHeldUpdateConfirmedAfterRestart: a verified update that needs the
// owner's confirmation is held under its key, listed with the other
// holds, and survives a restart; a pipeline that cannot install
// (torpor-agent's offline commands) refuses to confirm it and keeps it;
// the running agent's confirmation hands the verified file on once, and
// the key is then completed in the ledger (never installed twice).
func TestHeldUpdateConfirmedAfterRestart(t *testing.T) {
	h := newHoldPipe(t)
	key := h.hold(gate.Hold, "needs-confirmation")
	if want := "update torpor-agent/2/linux-armv6@2#abababababababab"; key != want {
		t.Fatalf("key %q, want %q", key, want)
	}
	h.hold(gate.Refuse, "held")
	h.reopen(false) // a power cut; the operator's offline command
	if hs := h.holds(); len(hs) != 1 || hs[0].Action.LedgerKey() != key || hs[0].Action.Purpose != runtime.PurposeUpdate {
		t.Fatalf("holds after a restart = %+v; want the update", hs)
	}
	if _, err := h.p.Confirm(context.Background(), key); !errors.Is(err, runtime.ErrNoInstall) {
		t.Fatalf("offline confirm: %v; want ErrNoInstall", err)
	}
	if len(h.holds()) != 1 {
		t.Fatal("the refused confirmation dropped the hold")
	}
	h.reopen(true)
	c, err := h.p.Confirm(context.Background(), key)
	if err != nil || c.Delivered != 1 || c.Entry.State != ledger.Completed {
		t.Fatalf("confirm = %+v, %v; want handed on, completed", c, err)
	}
	if len(h.inst.paths) != 1 || !bytes.Equal(h.inst.paths[0], h.build) || h.inst.res[0].Target != h.res.Target ||
		h.inst.res[0].Custom.Version != 2 || h.inst.res[0].SHA256 != h.res.SHA256 {
		t.Fatalf("installed %d files, results %+v; want the verified build once", len(h.inst.paths), h.inst.res)
	}
	if len(h.holds()) != 0 {
		t.Fatal("the confirmed update is still held")
	}
	h.hold(gate.Refuse, "completed")
	if _, err := h.p.Confirm(context.Background(), key); !errors.Is(err, gate.ErrNoHold) {
		t.Fatalf("second confirm: %v; want ErrNoHold", err)
	}
	if len(h.inst.paths) != 1 {
		t.Fatalf("installed %d times", len(h.inst.paths))
	}
}

// TestHeldUpdateDeniedOrExpired: a denied update is dropped, never
// installed, and remembered across a restart (Hold refuses it, denied);
// one whose targets metadata expired (by the time the pipeline
// judges expiry by) cannot be confirmed and is swept; one whose file
// changed on flash is not handed on, and its key is released so that the
// next check holds it again; DropUpdates drops a superseded one.
func TestHeldUpdateDeniedOrExpired(t *testing.T) {
	h := newHoldPipe(t)
	denied := h.hold(gate.Hold, "needs-confirmation")
	if hd, err := h.p.Deny(denied); err != nil || hd.Action.LedgerKey() != denied {
		t.Fatalf("deny = %+v, %v", hd, err)
	}
	if _, err := h.p.Confirm(context.Background(), denied); !errors.Is(err, gate.ErrNoHold) {
		t.Fatalf("confirm after deny: %v; want ErrNoHold", err)
	}
	h.reopen(true)
	h.hold(gate.Refuse, runtime.ReasonDenied) // remembered: the next checks do not hold it again

	h.res.Custom.Version, h.res.SHA256 = 3, strings.Repeat("cd", 32) // a newer publish
	key := h.hold(gate.Hold, "needs-confirmation")
	h.clock.Advance(72 * time.Hour)
	if _, err := h.p.Confirm(context.Background(), key); !errors.Is(err, gate.ErrExpired) {
		t.Fatalf("confirm after the expiry: %v; want ErrExpired", err)
	}
	if _, err := h.p.Redecide(context.Background()); err != nil {
		t.Fatal(err)
	}
	if hs := h.holds(); len(hs) != 0 {
		t.Fatalf("holds after the expiry = %+v; want it swept", hs)
	}

	h.res.Expires = h.clock.Now().Add(time.Hour)
	h.hold(gate.Hold, "needs-confirmation")
	os.WriteFile(h.res.Path, []byte("changed on flash"), 0o600)
	c, err := h.p.Confirm(context.Background(), key)
	if err != nil || c.Delivered != 0 || c.Entry.State != ledger.Released {
		t.Fatalf("confirm of a changed file = %+v, %v; want nothing handed on, the key released", c, err)
	}
	os.WriteFile(h.res.Path, h.build, 0o600)
	h.hold(gate.Hold, "needs-confirmation")

	h.res.Target, h.res.Custom.Version = "torpor-agent/4/linux-armv6", 4
	newer := h.hold(gate.Hold, "needs-confirmation")
	dropped, err := h.p.DropUpdates("", newer)
	if err != nil || len(dropped) != 1 || dropped[0].Action.LedgerKey() != key {
		t.Fatalf("DropUpdates = %+v, %v; want the superseded %s", dropped, err, key)
	}
	if hs := h.holds(); len(hs) != 1 || hs[0].Action.LedgerKey() != newer {
		t.Fatalf("holds = %+v; want only %s", hs, newer)
	}
	if len(h.inst.paths) != 0 {
		t.Fatalf("installed %d files; want none", len(h.inst.paths))
	}
}

// TestWakeHoldsConfirmTarget: a wake that verifies a target needing the
// owner's confirmation holds it instead of handing it on: the signed
// status says held (needs-confirmation, so a rollout keeps the device
// pending) and lists the held action. The agent restarts; the owner's
// confirmation then hands the verified build on and the agent restarts
// into it at the end of its next wake, and the next start reports it
// verified and holds nothing.
func TestWakeHoldsConfirmTarget(t *testing.T) {
	build := bytes.Repeat([]byte{9}, 150_000)
	w, inst := confirmWorld(t, wake.HourlyWake, build)
	// With rauc on too: its check finds no bundle (up to date) and must
	// leave the build's hold alone.
	w.cfg.Relay.Updates.Rauc, _ = rauc.New(rauc.Config{Command: "/nonexistent/rauc", State: filepath.Join(t.TempDir(), "rauc.json")})
	w.bootSuspending()
	st := w.status()
	u := st.Update
	if u == nil || u.Outcome != wire.UpdateHeld || u.Reason != string(update.Confirm) || !strings.Contains(u.Detail, "held action update torpor-agent/2/linux-armv6@2#") {
		t.Fatalf("the status's update = %+v; want held, needs-confirmation, naming the key", u)
	}
	if st.HeldCount != 1 || len(st.Held) != 1 || st.Held[0].Purpose != runtime.PurposeUpdate {
		t.Fatalf("the status's holds = %d %+v; want the update", st.HeldCount, st.Held)
	}
	key := st.Held[0].Key
	if len(inst.paths) != 0 {
		t.Fatal("a target that needs the owner's confirmation was handed on")
	}
	w.shutdown()

	rtc, _ := w.bootSuspending() // restarted: still held, not handed on
	if st := w.status(); st.HeldCount != 1 || st.Update.Outcome != wire.UpdateHeld || len(inst.paths) != 0 {
		t.Fatalf("after a restart: holds %d, update %+v, %d installs; want held, none", st.HeldCount, st.Update, len(inst.paths))
	}
	c, err := w.agent.Pipeline().Confirm(context.Background(), key)
	if err != nil || c.Entry.State != ledger.Completed || len(inst.paths) != 1 || !bytes.Equal(inst.paths[0], build) {
		t.Fatalf("confirm = %+v, %v, %d installs; want the build handed on", c, err, len(inst.paths))
	}
	// The installed build must start: the agent, asleep, restarts at the
	// end of its next wake.
	<-rtc.asleep
	rtc.wakeup <- struct{}{}
	if err := <-w.done; !errors.Is(err, runtime.ErrRestart) {
		t.Fatalf("Run after the confirmed install and a wake = %v; want ErrRestart", err)
	}
	w.bootSuspending()
	if st := w.status(); st.HeldCount != 0 || st.Update.Outcome != wire.UpdateVerified || !strings.Contains(st.Update.Detail, "confirmed by the owner") || len(inst.paths) != 1 {
		t.Fatalf("after the confirmation: holds %d, update %+v, %d installs; want verified, installed once", st.HeldCount, st.Update, len(inst.paths))
	}
	w.shutdown()
}

func relayWithUpdates(repo *updaterepo.Repo) relay.Config {
	return relay.Config{Stores: relay.Stores{Updates: repo}}
}

// TestWakeDeniedUpdate: an update the owner denied is not held again by
// the next wake's check, after a restart: the status reports it refused,
// "denied", with no hold and nothing handed on.
func TestWakeDeniedUpdate(t *testing.T) {
	clk := clocktest.New(t0)
	repo, root := updateRepoWith(t, clk, bytes.Repeat([]byte{3}, 50_000), update.Custom{Version: 2, GOARCH: "arm", GOARM: "6", Confirm: true})
	w := newWorldWith(t, wake.HourlyWake, relayWithUpdates(repo))
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "meta"), 0o700)
	os.WriteFile(filepath.Join(dir, "meta", "root.json"), root, 0o600)
	inst := &installs{}
	w.cfg.Relay.Updates = &runtime.Updates{Dir: dir, Installed: 1, Device: update.Device{GOARCH: "arm", GOARM: "6"}, OnVerified: inst.installErr}
	w.bootSuspending()
	st := w.status()
	if st.HeldCount != 1 {
		t.Fatalf("holds %d; want the update", st.HeldCount)
	}
	if _, err := w.agent.Pipeline().Deny(st.Held[0].Key); err != nil {
		t.Fatal(err)
	}
	w.shutdown()
	w.bootSuspending()
	st = w.status()
	if u := st.Update; st.HeldCount != 0 || u.Outcome != wire.UpdateRefused || u.Reason != runtime.ReasonDenied || len(inst.paths) != 0 {
		t.Fatalf("after the denial: holds %d, update %+v, %d installs; want refused (denied), no hold", st.HeldCount, u, len(inst.paths))
	}
	w.shutdown()
}

// TestLiveWakeRestartsAfterAConfirmedInstall: an always_on agent, whose
// wake never ends by itself, holds a confirm target; the owner's
// confirmation during the wake installs it, and the live wake ends so
// that the agent restarts into the build (Run returns ErrRestart).
func TestLiveWakeRestartsAfterAConfirmedInstall(t *testing.T) {
	w, inst := confirmWorld(t, wake.AlwaysOn, bytes.Repeat([]byte{9}, 150_000))
	w.newAgent()
	w.run()
	w.waitPhase(runtime.PhaseUpdate) // the check held it
	hs, err := w.agent.Pipeline().Holds()
	if err != nil || len(hs) != 1 || hs[0].Action.Purpose != runtime.PurposeUpdate {
		t.Fatalf("holds after the live wake's check = %+v, %v; want the update", hs, err)
	}
	c, err := w.agent.Pipeline().Confirm(context.Background(), hs[0].Action.LedgerKey())
	if err != nil || c.Entry.State != ledger.Completed || len(inst.paths) != 1 {
		t.Fatalf("confirm = %+v, %v, %d installs; want the build handed on", c, err, len(inst.paths))
	}
	if err := <-w.done; !errors.Is(err, runtime.ErrRestart) {
		t.Fatalf("Run of the live wake after the confirmed install = %v; want ErrRestart", err)
	}
}

// confirmWorld is an agent in mode running build version 1 of an armv6
// device, provisioned with the owner's first root, whose relay holds
// build as version 2, a target that needs the owner's confirmation; what
// it hands on to install is recorded in the installs returned.
func confirmWorld(t *testing.T, mode wake.Mode, build []byte) (*world, *installs) {
	t.Helper()
	repo, root := updateRepoWith(t, clocktest.New(t0), build, update.Custom{Version: 2, GOARCH: "arm", GOARM: "6", Confirm: true})
	w := newWorldWith(t, mode, relayWithUpdates(repo))
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "meta"), 0o700)
	os.WriteFile(filepath.Join(dir, "meta", "root.json"), root, 0o600)
	inst := &installs{}
	w.cfg.Relay.Updates = &runtime.Updates{Dir: dir, Installed: 1, Device: update.Device{GOARCH: "arm", GOARM: "6"},
		OnVerified: inst.installErr}
	return w, inst
}

// TestConfirmDuringATrialIsNotSpent: the owner confirms a held build
// while another build is on trial (OnVerified refuses with
// slots.ErrTrial): nothing is installed and the confirmation is not
// spent on it (the key released, not completed), so the next wake's
// check holds the update again, and a confirmation after the trial
// installs it. Before, the key was completed with the failure and the
// update never installed.
func TestConfirmDuringATrialIsNotSpent(t *testing.T) {
	build := bytes.Repeat([]byte{7}, 120_000)
	w, inst := confirmWorld(t, wake.HourlyWake, build)
	onTrial := true
	w.cfg.Relay.Updates.OnVerified = func(path string, res update.Result) error {
		if onTrial {
			return fmt.Errorf("install: %w", slots.ErrTrial)
		}
		return inst.installErr(path, res)
	}
	w.bootSuspending()
	st := w.status()
	if st.HeldCount != 1 {
		t.Fatalf("holds %d; want the update", st.HeldCount)
	}
	c, err := w.agent.Pipeline().Confirm(context.Background(), st.Held[0].Key)
	if err != nil || c.Delivered != 0 || c.Entry.State != ledger.Released || len(inst.paths) != 0 {
		t.Fatalf("confirm during a trial = %+v, %v, %d installs; want nothing handed on, the key released", c, err, len(inst.paths))
	}
	w.shutdown()

	onTrial = false // the trial ended
	w.bootSuspending()
	st = w.status()
	if st.HeldCount != 1 {
		t.Fatalf("after the trial: holds %d; want the update held again", st.HeldCount)
	}
	c, err = w.agent.Pipeline().Confirm(context.Background(), st.Held[0].Key)
	if err != nil || c.Entry.State != ledger.Completed || len(inst.paths) != 1 || !bytes.Equal(inst.paths[0], build) {
		t.Fatalf("confirm after the trial = %+v, %v, %d installs; want the build handed on", c, err, len(inst.paths))
	}
	w.shutdown()
}
