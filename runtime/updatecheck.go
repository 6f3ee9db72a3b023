package runtime

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/torpor-dev/torpor/runtime/gate"
	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// checkUpdate checks the relay's update repository over the wake's link
// (Config.Relay.Updates): TUF's client workflow with expiry judged by the
// trusted time, at most Budget bytes of a target. The outcome goes into
// the wake's signed status; a verified file goes to OnVerified, or, when
// its target needs the owner's confirmation, is held for the owner
// (updatehold.go).
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
	a.log.Info("update check", "outcome", st.Outcome, "target", st.Target, "version", st.Version, "reason", st.Reason,
		"detail", st.Detail, "bytes", st.Bytes)
}

// handOnUpdate acts on a check that found no fault: a verified file goes
// to install, or is held for the owner (the status then names the held
// action's key). Held updates of the check's target type typ other than
// this one are dropped: a newer publish superseded them, or the device is
// up to date.
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
			st.Detail = cut(st.Detail+"; held action "+key, wire.MaxStatusUpdateDetail)
			if d.Verdict == gate.Hold {
				a.log.Info("update held for the owner's confirmation", "key", key, "target", res.Target, "version", res.Custom.Version)
				a.StatusChanged()
			}
		case ReasonDenied:
			st.Outcome, st.Reason = wire.UpdateRefused, ReasonDenied
			st.Detail = cut(fmt.Sprintf("the owner denied %s", key), wire.MaxStatusUpdateDetail)
		default: // confirmed before: handed on then (completed), or cut off by a crash
			st.Outcome, st.Reason = wire.UpdateVerified, ""
			st.Detail = cut(fmt.Sprintf("confirmed by the owner as %s (ledger: %s)", key, d.Reason), wire.MaxStatusUpdateDetail)
		}
	} else if res.Path != "" {
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

// cut shortens s to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
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
