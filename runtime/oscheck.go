package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/torpor-dev/torpor/internal/safetext"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/runtime/update/rauc"
	"github.com/torpor-dev/torpor/runtime/update/slots"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// checkOS is the wake's check for operating-system bundles (targets of
// type rauc-bundle), after the agent's own check spent spent bytes of the
// wake's budget: the installed version is the last bundle rauc installed
// (rauc.State), and a verified bundle goes to rauc install, or is held for
// the owner when its target says so. A bundle rauc failed is not handed
// to it again: a newer publish is.
func (w *wakeRun) checkOS(cfg *Updates, spent int64) *wire.StatusUpdate {
	a := w.a
	left := cmp.Or(cfg.Budget, update.DefaultBudget) - spent
	if left <= 0 {
		return update.Status(update.Result{}, &update.Refusal{Code: update.Budget,
			Detail: "the agent's download used this wake's budget; bundles are checked at the next wake"})
	}
	s, err := cfg.Rauc.State()
	if err != nil {
		return update.Status(update.Result{}, err)
	}
	c, err := update.New(update.Config{Dir: cfg.Dir, Type: update.TypeRauc, Source: update.LinkSource(w.l.(update.Link)),
		Device: cfg.Device, Installed: s.Installed, Budget: left, Now: a.updateTime, Supply: w.supply})
	if err != nil {
		return update.Status(update.Result{}, err)
	}
	res, err := c.Check(w.ctx)
	st := update.Status(res, err)
	if last := s.Last; err == nil && res.Path != "" && last != nil && last.Result == rauc.Failed && last.SHA256 == res.SHA256 {
		st.Detail = safetext.Clip("rauc failed this bundle before ("+last.Reason+"); a newer publish is tried", wire.MaxStatusUpdateDetail)
		return st
	}
	if err == nil {
		if err := a.handOnUpdate(update.TypeRauc, res, st); err != nil {
			a.log.Warn("OS update", "err", err)
		}
	}
	a.log.Info("OS update check", "outcome", st.Outcome, "target", st.Target, "version", st.Version, "reason", st.Reason,
		"detail", st.Detail, "bytes", st.Bytes)
	return st
}

// installVerified hands a verified file on: a rauc bundle to rauc
// install, a build of the agent to Updates.OnVerified. With nothing to
// install it, or while another build is on trial (slots.ErrTrial), it
// returns an error wrapping deliver.ErrNotStarted (a confirmed hold's
// ledger key is then released, not completed: the next check holds the
// update again).
func (a *Agent) installVerified(path string, res update.Result) error {
	u := a.cfg.Relay.Updates
	switch {
	case res.Custom.Type == update.TypeRauc && u.Rauc != nil:
		o, err := u.Rauc.Install(context.Background(), path, res.Target, res.Custom.Version, res.SHA256)
		a.log.Info("OS update handed to rauc", "target", res.Target, "version", res.Custom.Version,
			"result", o.Result, "reason", o.Reason)
		a.StatusChanged()
		return err
	case res.Custom.Type == "" && u.OnVerified != nil:
		if err := u.OnVerified(path, res); errors.Is(err, slots.ErrTrial) {
			// Not started: the key is released, and the next wake's check
			// holds the update again, for the owner to confirm once the
			// trial ended (before, the confirmation was spent on it).
			return fmt.Errorf("%w: installing %s waits for the trial of the running build to end; confirm it again after it: %w", deliver.ErrNotStarted, res.Target, err)
		} else if err != nil {
			return err
		}
		a.restartAfterInstall("update " + res.Target + " installed (confirmed by the owner)")
		return nil
	}
	return fmt.Errorf("%w: nothing on this agent installs %s (type %q)", deliver.ErrNotStarted, res.Target, res.Custom.Type)
}

// restartAfterInstall makes the agent restart into a build installed
// outside a wake's update phase (an owner's confirmation, from the
// command that confirmed it): at the end of the wake in progress (a live
// wake stops staying live), or of the next wake. Never at once: the
// confirmation that installed it still has its own bookkeeping to
// commit, and the restart closes the stores (Run returns ErrRestart).
// A stop before then loses nothing: the slot launcher starts the
// installed build at the next start all the same.
func (a *Agent) restartAfterInstall(why string) {
	a.mu.Lock()
	w := a.cur
	if w == nil {
		a.pendingRestart = why
	}
	a.mu.Unlock()
	if w == nil {
		return
	}
	w.mu.Lock()
	w.restart = why
	w.mu.Unlock()
	select {
	case w.newOffer <- struct{}{}: // a live wake looks at w.restart and ends
	default:
	}
}

// osInstallStatus is the last rauc outcome as the signed status reports
// it (nil before the first).
func (a *Agent) osInstallStatus(in *rauc.Installer) *wire.StatusInstall {
	s, err := in.State()
	if err != nil || s.Last == nil {
		if err != nil {
			a.log.Warn("OS update: reading rauc's outcome", "err", err)
		}
		return nil
	}
	return &wire.StatusInstall{Result: s.Last.Result, Version: strconv.FormatUint(s.Last.Version, 10),
		Reason: s.Last.Reason, At: s.Last.At}
}
