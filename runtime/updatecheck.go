package runtime

import (
	"errors"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/internal/safetext"
	"github.com/torpor-dev/torpor/runtime/gate"
	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/runtime/update/slots"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// checkUpdate checks the relay's update repository over the wake's link
// (Config.Relay.Updates): TUF's client workflow with expiry judged by the
// trusted time, at most Budget bytes of a target, the target the relay's
// last state-ok offered (wire.Offer) when it offered one. The outcome goes
// into the wake's signed status. A verified file of an offered target
// goes to OnVerified (install), and once installed the wake ends and the
// agent restarts (wakeRun.restart); one whose target needs the owner's
// confirmation is held for the owner instead, offered or not
// (updatehold.go), and installed when the owner confirms it.
func (w *wakeRun) checkUpdate() {
	a := w.a
	cfg := a.cfg.Relay.Updates
	ul, ok := w.l.(update.Link)
	if cfg == nil || !ok {
		return
	}
	offer := w.offered()
	var st *wire.StatusUpdate
	w.ph.measure(PhaseUpdate, func() error {
		c, err := update.New(update.Config{Dir: cfg.Dir, Source: update.LinkSource(ul), Device: cfg.Device,
			Installed: cfg.Installed, Budget: cfg.Budget, Running: cfg.Running, Now: a.updateTime, Supply: w.supply, Offer: offer})
		if err != nil {
			st = update.Status(update.Result{}, err)
			return err
		}
		res, err := c.Check(w.ctx)
		if err == nil && res.Path != "" && res.Rollout != "" && !res.AwaitsConfirmation {
			err = w.install(cfg, res)
		}
		st = update.Status(res, err)
		if err == nil {
			err = a.handOnUpdate("", res, st)
		}
		if cfg.Rauc != nil {
			osSt := w.checkOS(cfg, st.Bytes)
			w.mu.Lock()
			w.osUpdate = osSt
			w.mu.Unlock()
		}
		return err
	})
	w.mu.Lock()
	w.update = st
	w.mu.Unlock()
	select {
	case w.restate <- struct{}{}: // a live wake publishes the outcome now, not at its end
	default:
	}
	a.log.Info("update check", "outcome", st.Outcome, "target", st.Target, "version", st.Version, "rollout", offerID(offer),
		"reason", st.Reason, "detail", st.Detail, "bytes", st.Bytes)
}

// install hands the verified file of an offered target to OnVerified; when
// it installed it, the wake ends after this phase and the agent restarts.
// An OnVerified refused because another build is on trial (slots.ErrTrial)
// makes the check's outcome waiting, not refused: the rollout keeps
// offering the target, and the agent installs it after the trial.
func (w *wakeRun) install(cfg *Updates, res update.Result) error {
	if cfg.OnVerified == nil {
		return &update.Refusal{Code: update.Install, Detail: "this agent has no A/B slots to install " + res.Target + " into"}
	}
	if err := cfg.OnVerified(res.Path, res); err != nil {
		if errors.Is(err, slots.ErrTrial) {
			// One install at a time: the offer is installed once the
			// running build's trial ended (TrialEnded, or the next wake).
			return &update.Refusal{Code: update.Trial, Detail: "installing " + res.Target + " waits for the trial of the running build to end: " + err.Error(), Err: err}
		}
		return &update.Refusal{Code: update.Install, Detail: "installing " + res.Target + ": " + err.Error(), Err: err}
	}
	w.a.log.Info("update installed into a slot; restarting after this wake", "target", res.Target,
		"version", res.Custom.Version, "rollout", res.Rollout)
	w.mu.Lock()
	w.restart = "update " + res.Target + " installed"
	w.mu.Unlock()
	return nil
}

// offered is the update the relay's last state-ok over this wake's links
// offered (wire.Accepted.Offer), or nil; it is the one checked from now
// on (offerChanged).
func (w *wakeRun) offered() *update.Offer {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checked = w.offer
	if w.offer == nil {
		return nil
	}
	o := w.offer
	return &update.Offer{Rollout: o.Rollout, Target: o.Target, Version: o.Version, SHA256: o.SHA256}
}

// offerChanged reports whether the relay offered another update than the
// one the wake's last update check had: a live wake that is offered one
// checks again at once (stayLive), rather than at its next wake.
func (w *wakeRun) offerChanged() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.offer != nil && (w.checked == nil || *w.offer != *w.checked)
}

// TrialEnded tells the agent that the build it runs ended its trial: it
// proved itself, and its slot is the active one now (torpor-agent's proof,
// runtime/update/slots Confirm). In a live wake the status, which names
// the install, is published at once (StatusChanged), and the target the
// relay's answer offers is checked again even when this wake checked it:
// an offered build whose install waited for the trial (update outcome
// waiting) is installed now and the agent restarts into it. A sleeping
// agent does both at its next wake.
func (a *Agent) TrialEnded() {
	a.mu.Lock()
	w := a.cur
	a.mu.Unlock()
	if w != nil {
		w.mu.Lock()
		w.checked = nil // offerChanged: the next answer's offer is new to the wake
		w.mu.Unlock()
	}
	a.StatusChanged()
}

func offerID(o *update.Offer) string {
	if o == nil {
		return ""
	}
	return o.Rollout
}

// restarting is why the wake asked for a restart once it ends (an update
// installed), or "".
func (w *wakeRun) restarting() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.restart
}

// handOnUpdate acts on a check that found no fault: a verified bundle
// goes to install, a file whose target needs the owner's confirmation is
// held for the owner (the status then names the held action's key). Held
// updates of the check's target type typ other than this one are
// dropped: a newer publish superseded them, or the device is up to date.
func (a *Agent) handOnUpdate(typ string, res update.Result, st *wire.StatusUpdate) error {
	keep := ""
	if res.Path != "" && res.AwaitsConfirmation {
		now, err := a.updateTime()
		if err != nil {
			return err
		}
		key, d, err := a.pipe.HoldUpdate(res, now)
		if err != nil {
			return err
		}
		keep = key
		switch d.Reason {
		case "held", string(update.Confirm):
			st.Detail = safetext.Clip(st.Detail+"; held action "+key, wire.MaxStatusUpdateDetail)
			if d.Verdict == gate.Hold {
				a.log.Info("update held for the owner's confirmation", "key", key, "target", res.Target, "version", res.Custom.Version)
				a.StatusChanged()
			}
		case ReasonDenied:
			st.Outcome, st.Reason = wire.UpdateRefused, ReasonDenied
			st.Detail = safetext.Clip(fmt.Sprintf("the owner denied %s", key), wire.MaxStatusUpdateDetail)
		default: // confirmed before: handed on then (completed), or cut off by a crash
			st.Outcome, st.Reason = wire.UpdateVerified, ""
			st.Detail = safetext.Clip(fmt.Sprintf("confirmed by the owner as %s (ledger: %s)", key, d.Reason), wire.MaxStatusUpdateDetail)
		}
	} else if res.Path != "" && typ == update.TypeRauc {
		// A build of the agent is installed only as a rollout offers
		// it (checkUpdate); rollouts offer no bundles.
		if err := a.installVerified(res.Path, res); err != nil {
			a.log.Info("update verified, not installed", "target", res.Target, "err", err)
		}
	}
	dropped, err := a.pipe.DropUpdates(typ, keep)
	for _, h := range dropped {
		a.log.Info("held update dropped", "key", h.Action.LedgerKey(), "why", "superseded by the repository's newest target for this device")
	}
	return err
}

// supply is the supply voltage the board reported at this wake
// (Config.Health), for a target's minimum.
func (w *wakeRun) supply() (int64, bool) {
	h := w.readHealth()
	if h == nil || h.SupplyMV == 0 {
		return 0, false
	}
	return h.SupplyMV, true
}

// updateTime is the time update checks judge expiry by: the trusted time
// when the agent keeps one (Config.TrustedTime), else its clock.
func (a *Agent) updateTime() (time.Time, error) {
	if a.trusted == nil {
		return a.clock.Now(), nil
	}
	return a.trusted.Trusted()
}
