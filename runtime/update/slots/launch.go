package slots

import (
	"errors"
	"fmt"
	"github.com/torpor-dev/torpor/internal/safetext"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/transport/link/wire"
)

// Plan is what the launcher runs at one start.
type Plan struct {
	// Slot is the slot to run, Base for the packaged binary; Path its
	// binary ("" for Base: the launcher goes on as the agent).
	Slot, Path string
	Version    string // the slot's version, when the state knows it
	// Trial says the slot is on trial: the launcher runs it as a child
	// (Supervise) that must confirm within Deadline.
	Trial    bool
	Deadline time.Duration
	// RolledBack is the outcome of a rollback this start made; nil
	// otherwise.
	RolledBack *Outcome
	// Replaced is the packaged version the slots were installed under,
	// when this start found another one and dropped the slots; "" otherwise.
	Replaced string
}

// Launch decides what this start runs and records it before anything
// runs: a trial's start is counted first, and a trial whose starts are
// used up (or whose binary no longer has the installed hash) is rolled
// back to the build that ran before it. baseVersion is the packaged
// binary's version. An error leaves Plan to run the packaged binary.
func (s *Slots) Launch(baseVersion string) (Plan, error) {
	unlock, err := s.lock()
	if err != nil {
		return Plan{}, err
	}
	defer unlock()
	st, err := s.Load()
	if err != nil {
		return Plan{}, err
	}
	if st.Base != "" && st.Base != baseVersion {
		// The package was replaced since: the operator's choice wins.
		p := Plan{Version: baseVersion, Replaced: st.Base}
		return p, s.save(State{Outcome: st.Outcome, Base: baseVersion})
	}
	if t := st.Trial; t != nil {
		reason := ""
		if t.Starts >= t.MaxStarts {
			reason = fmt.Sprintf("no proof in %d starts: %s", t.Starts, strings.Join(t.Failures, "; "))
		} else if sum, err := s.sum(t.Slot); err != nil || sum != t.SHA256 {
			reason = fmt.Sprintf("slot %s's binary is not the one installed (%v)", t.Slot, errOr(err, "sha256 "+sum))
		}
		if reason == "" {
			t.Starts++
			if err := s.save(st); err != nil {
				return Plan{}, err
			}
			return Plan{Slot: t.Slot, Path: s.Path(t.Slot), Version: t.Version, Trial: true, Deadline: t.Deadline}, nil
		}
		o := &Outcome{Result: RolledBack, Version: t.Version, From: t.From, Reason: reason, At: s.Clock.Now().UTC()}
		st.Trial, st.Outcome = nil, o
		if err := s.save(st); err != nil {
			return Plan{}, err
		}
		p, err := s.active(st, baseVersion)
		p.RolledBack = o
		return p, err
	}
	return s.active(st, baseVersion)
}

func errOr(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return s
}

// active is the plan that runs st's active slot; a slot whose binary is
// gone leaves the packaged binary to run, with the error.
func (s *Slots) active(st State, baseVersion string) (Plan, error) {
	if st.Active == Base {
		return Plan{Version: baseVersion}, nil
	}
	p := Plan{Slot: st.Active, Path: s.Path(st.Active), Version: st.ActiveVersion}
	f, err := s.fs.Open(p.Path)
	if err != nil {
		return Plan{Version: baseVersion}, fmt.Errorf("slots: active slot %s: %w", st.Active, err)
	}
	f.Close()
	return p, nil
}

// Fail records why a start of slot on trial ended unconfirmed; nothing
// when the slot is no longer on trial (it confirmed meanwhile).
func (s *Slots) Fail(slot, why string) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	st, err := s.Load()
	if err != nil || st.Trial == nil || st.Trial.Slot != slot {
		return err
	}
	st.Trial.Failures = append(st.Trial.Failures, fmt.Sprintf("start %d: %s", st.Trial.Starts, why))
	return s.save(st)
}

// ErrNotOnTrial is Confirm's error when slot is not the one on trial.
var ErrNotOnTrial = errors.New("slots: not on trial")

// Confirm makes slot, which proved itself, the active build: the launcher
// runs it from now on and the previous build stays in the other slot.
func (s *Slots) Confirm(slot string) (Outcome, error) {
	unlock, err := s.lock()
	if err != nil {
		return Outcome{}, err
	}
	defer unlock()
	st, err := s.Load()
	if err != nil {
		return Outcome{}, err
	}
	t := st.Trial
	if t == nil || t.Slot != slot {
		return Outcome{}, fmt.Errorf("%w: slot %q", ErrNotOnTrial, slot)
	}
	o := Outcome{Result: Installed, Version: t.Version, From: t.From, At: s.Clock.Now().UTC()}
	st = State{Active: t.Slot, ActiveVersion: t.Version, ActiveSHA256: t.SHA256, Outcome: &o, Base: st.Base}
	return o, s.save(st)
}

// OnTrial says whether slot is the slot on trial.
func (s *Slots) OnTrial(slot string) bool {
	st, err := s.Load()
	return err == nil && slot != Base && st.Trial != nil && st.Trial.Slot == slot
}

// Status is the last install's outcome for the agent's signed status
// (runtime.Config.Status.Install); nil before the first install or when the state
// cannot be read. The outcome stays until the next install replaces it.
func (s *Slots) Status() *wire.StatusInstall {
	st, err := s.Load()
	if err != nil || st.Outcome == nil {
		return nil
	}
	o := st.Outcome
	return &wire.StatusInstall{Result: o.Result, Version: safetext.Show(o.Version), From: safetext.Show(o.From),
		Reason: safetext.Clip(o.Reason, wire.MaxInstallReason), At: o.At}
}
