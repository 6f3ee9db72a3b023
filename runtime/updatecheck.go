package runtime

import (
	"time"

	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// checkUpdate checks the relay's update repository over the wake's link
// (Config.Relay.Updates): TUF's client workflow with expiry judged by the
// trusted time, at most Budget bytes of a target. The outcome goes into
// the wake's signed status; a verified file goes to OnVerified.
func (w *wakeRun) checkUpdate() {
	a := w.a
	cfg := a.cfg.Relay.Updates
	ul, ok := w.l.(update.Link)
	if cfg == nil || !ok {
		return
	}
	var st *wire.StatusUpdate
	w.ph.measure(PhaseUpdate, func() error {
		c, err := update.New(update.Config{Dir: cfg.Dir, Source: update.LinkSource(ul), Device: cfg.Device,
			Installed: cfg.Installed, Budget: cfg.Budget, Running: cfg.Running, Now: a.updateTime, Supply: w.supply})
		if err != nil {
			st = update.Status(update.Result{}, err)
			return err
		}
		res, err := c.Check(w.ctx)
		st = update.Status(res, err)
		if err == nil && res.Path != "" && cfg.OnVerified != nil {
			cfg.OnVerified(res.Path, res)
		}
		return err
	})
	w.mu.Lock()
	w.update = st
	w.mu.Unlock()
	a.log.Info("update check", "outcome", st.Outcome, "target", st.Target, "version", st.Version, "reason", st.Reason,
		"detail", st.Detail, "bytes", st.Bytes)
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
