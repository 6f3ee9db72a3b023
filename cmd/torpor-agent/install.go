package main

import (
	"errors"
	"log/slog"
	"os"
	"strconv"

	"github.com/torpor-dev/torpor/internal/version"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/conffile"
	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/runtime/update/slots"
)

// errNoLauncher is why an agent that does not run under the slot launcher
// installs nothing: only the launcher starts a build put on trial, and
// rolls it back.
var errNoLauncher = errors.New("the agent does not run under the slot launcher (torpor-agent --slot-launch, the unit's ExecStart), so it has no A/B slots to install into")

// updates wires the update check's install into the A/B slots (docs/updates.md,
// "Install on the device"): Installed becomes the version of the build
// this process runs (a slot's, as it was installed), and a verified build
// of a target a rollout offered goes to hand, the hand-off, when the agent
// runs under the slot launcher (launched, or TORPOR_SLOT set by it).
func updates(f *conffile.File, cfg *runtime.Config, launched bool, log *slog.Logger) {
	u := cfg.Relay.Updates
	if u == nil {
		return
	}
	s := slots.New(f.SlotsDir(), cfg.Clock)
	slot := os.Getenv(slots.EnvSlot)
	u.Installed = running(s, slot, u.Installed)
	if !launched && slot == "" {
		u.OnVerified = func(path string, res update.Result) error {
			log.Warn("update verified, not installed", "target", res.Target, "version", res.Custom.Version, "why", errNoLauncher)
			return errNoLauncher
		}
		return
	}
	u.OnVerified = hand(s, f.Trial(), log)
}

// running is the update version of the build this process runs: the
// version slot was installed with (the target's signed version, hand) when
// a slot runs and its version is one, else the file's "update.version" (the
// packaged build's).
func running(s *slots.Slots, slot string, file uint64) uint64 {
	if slot == slots.Base {
		return file
	}
	st, err := s.Load()
	if err != nil {
		return file
	}
	v := ""
	switch {
	case st.Trial != nil && st.Trial.Slot == slot:
		v = st.Trial.Version
	case st.Active == slot:
		v = st.ActiveVersion
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return file // installed by hand under another name (torpor-agent slots install)
	}
	return n
}

// hand is the hand-off of a verified build to the slots: it writes the
// file into the slot not running and puts it on trial, under the target's
// signed version in decimal (what the rollout and the status name). The
// runtime then ends the wake and restarts the agent, and the launcher
// starts the new build for its trial. This is the single place where a
// verified build is installed: a target that needs the owner's
// confirmation (update.Custom.Confirm) is to be held by wrapping it.
func hand(s *slots.Slots, trial slots.TrialOptions, log *slog.Logger) func(path string, res update.Result) error {
	return func(path string, res update.Result) error {
		v := strconv.FormatUint(res.Custom.Version, 10)
		if err := s.Install(path, v, version.Get().Version, trial); errors.Is(err, slots.ErrTrial) {
			// The runtime installs it once the trial ended (Agent.TrialEnded).
			log.Info("update verified, waiting for the trial of the running build", "target", res.Target, "version", v, "rollout", res.Rollout)
			return err
		} else if err != nil {
			log.Error("update verified, not installed", "target", res.Target, "version", v, "err", err)
			return err
		}
		log.Info("update put on trial", "target", res.Target, "version", v, "rollout", res.Rollout)
		return nil
	}
}
