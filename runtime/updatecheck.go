package runtime

import (
	"time"

	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// checkUpdate checks the relay's update repository over the wake's link
// (Config.Relay.Updates): TUF's client workflow with expiry judged by the
// trusted time, at most Budget bytes of a target, the target the relay's
// last state-ok offered (wire.Offer) when it offered one. The outcome goes
// into the wake's signed status; a verified file of an offered target goes
// to OnVerified (install), and once installed the wake ends and the agent
// restarts (wakeRun.restart).
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
			Installed: cfg.Installed, Budget: cfg.Budget, Now: a.updateTime, Supply: w.supply, Offer: offer})
		if err != nil {
			st = update.Status(update.Result{}, err)
			return err
		}
		res, err := c.Check(w.ctx)
		if err == nil && res.Path != "" && res.Rollout != "" {
			err = w.install(cfg, res)
		}
		st = update.Status(res, err)
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
func (w *wakeRun) install(cfg *Updates, res update.Result) error {
	if cfg.OnVerified == nil {
		return &update.Refusal{Code: update.Install, Detail: "this agent has no A/B slots to install " + res.Target + " into"}
	}
	if err := cfg.OnVerified(res.Path, res); err != nil {
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
