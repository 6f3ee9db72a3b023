package rollout

import (
	"fmt"
	"github.com/torpor-dev/torpor/internal/safetext"
	"slices"
	"time"
)

// Offer reports whether device should be offered the target at a wake at
// now: the rollout runs, the device is in a started wave, and it has not
// reported yet.
func (r *Rollout) Offer(device string) bool {
	if r.State != Running {
		return false
	}
	w := r.WaveOf(device)
	_, reported := r.Results[device]
	return w >= 0 && w <= r.Wave && !reported
}

// Report records device's outcome at now, then judges the criteria and
// the waves (Step). A device outside the rollout's started waves is
// refused; a second report replaces the first (a device that rolled back
// and installed at a later offer counts as installed).
func (r *Rollout) Report(device string, o Outcome, reason string, now time.Time) error {
	if o != Installed && o != RolledBack && o != Refused {
		return fmt.Errorf("%w: %q", ErrBadOutcome, o)
	}
	if w := r.WaveOf(device); w < 0 || w > r.Wave {
		return fmt.Errorf("rollout %s: device %s is not in a started wave", r.ID, device)
	}
	if len(reason) > MaxReason {
		reason = reason[:MaxReason]
	}
	r.Results[device] = Result{Outcome: o, Reason: reason, At: now, Epoch: r.Epoch}
	r.Changed = now
	r.Step(now)
	return nil
}

// Step moves the rollout on at now and reports whether it changed: a
// breach of the criteria pauses it; a wave all of whose devices reported,
// or that has run for WaveTime, starts the next; the last wave all
// reported is Done.
func (r *Rollout) Step(now time.Time) bool {
	if r.State != Running {
		return false
	}
	if why, breached := r.Breach(); breached {
		r.State, r.Reason, r.Changed = Paused, why, now
		return true
	}
	changed := false
	for r.Wave+1 < len(r.Waves) && (r.reported(r.Wave) || !now.Before(r.Waves[r.Wave].Started.Add(r.WaveTime))) {
		r.Wave++
		r.Waves[r.Wave].Started, r.Changed, changed = now, now, true
	}
	if r.Wave == len(r.Waves)-1 && r.Counts().Pending == 0 {
		r.State, r.Reason, r.Changed = Done, "", now
		return true
	}
	return changed
}

// due reports whether Step at now would change the rollout.
func (r *Rollout) due(now time.Time) bool {
	if r.State != Running {
		return false
	}
	if _, breached := r.Breach(); breached {
		return true
	}
	if r.Wave+1 < len(r.Waves) {
		return r.reported(r.Wave) || !now.Before(r.Waves[r.Wave].Started.Add(r.WaveTime))
	}
	return r.Counts().Pending == 0
}

// reported reports whether every device of wave i reported.
func (r *Rollout) reported(i int) bool {
	for _, d := range r.Waves[i].Devices {
		if _, ok := r.Results[d]; !ok {
			return false
		}
	}
	return true
}

// Breach returns why the criteria are breached by the results of the
// current epoch, if they are.
func (r *Rollout) Breach() (string, bool) {
	c := r.Criteria
	if c.ThresholdPercent == 0 {
		return "", false
	}
	executed, failed := 0, 0
	for _, res := range r.Results {
		if res.Epoch != r.Epoch || res.Outcome == Left {
			continue
		}
		executed++
		if c.counts(res.Outcome) {
			failed++
		}
	}
	if executed == 0 || executed < c.MinExecuted {
		return "", false
	}
	rate := 100 * float64(failed) / float64(executed)
	if rate < c.ThresholdPercent {
		return "", false
	}
	return fmt.Sprintf("failure rate %.1f %% (%d of %d reported) reached the threshold %v %%", rate, failed, executed, c.ThresholdPercent), true
}

// counts reports whether o is a failure of one of c's types.
func (c Criteria) counts(o Outcome) bool {
	if o == Installed {
		return false
	}
	return len(c.FailureTypes) == 0 || slices.Contains(c.FailureTypes, FailureAll) || slices.Contains(c.FailureTypes, string(o))
}

// Leave records that device left r before it reported, for reason: it
// left the tenant of r, a tenant's rollout, or the relay forgot it. Its
// result is Left, so that it is offered the target no more and the
// rollout can end without it (Step). It reports whether r changed: not
// for a rollout aborted or done, a device not in r, or one that reported
// already (an outcome it reported stays).
func (r *Rollout) Leave(device, reason string, now time.Time) bool {
	if r.State == Aborted || r.State == Done || r.WaveOf(device) < 0 {
		return false
	}
	if _, reported := r.Results[device]; reported {
		return false
	}
	r.Results[device] = Result{Outcome: Left, Reason: clip(reason), At: now, Epoch: r.Epoch}
	r.Changed = now
	r.Step(now)
	return true
}

// outside returns r's devices without a result that in does not accept.
func (r *Rollout) outside(in func(device string) bool) []string {
	var out []string
	for _, w := range r.Waves {
		for _, d := range w.Devices {
			if _, reported := r.Results[d]; !reported && !in(d) {
				out = append(out, d)
			}
		}
	}
	return out
}

// Carry gives device's place in r to successor, the key that device's
// agent retired it for: the same device under a new DID, which runs the
// same build and reports its install under the new key. successor takes
// device's place in its wave, and a result device reported moves with it,
// so that the device is offered the target (or not, once it reported) and
// its outcome counted as before the rotation. When successor is in r
// already, device leaves r instead (Leave): the device has its place
// there. It reports whether r changed: not for a rollout aborted or done,
// or a device not in r.
func (r *Rollout) Carry(device, successor string, now time.Time) bool {
	w := r.WaveOf(device)
	if r.State == Aborted || r.State == Done || w < 0 || successor == "" || successor == device {
		return false
	}
	if r.WaveOf(successor) >= 0 {
		return r.Leave(device, "retired: its successor "+successor+" is in the rollout", now)
	}
	i := slices.Index(r.Waves[w].Devices, device)
	r.Waves[w].Devices[i] = successor
	if res, ok := r.Results[device]; ok {
		r.Results[successor] = res
		delete(r.Results, device)
	}
	r.Changed = now
	return true
}

// Pause stops offering the target until Resume.
func (r *Rollout) Pause(reason string, now time.Time) error {
	if r.State != Running {
		return fmt.Errorf("%w: pausing a rollout that is %s", ErrState, r.State)
	}
	r.State, r.Reason, r.Changed = Paused, clip(reason), now
	return nil
}

// Resume runs a paused rollout again, starting a new epoch for the
// criteria, and steps it.
func (r *Rollout) Resume(now time.Time) error {
	if r.State != Paused {
		return fmt.Errorf("%w: resuming a rollout that is %s", ErrState, r.State)
	}
	r.State, r.Reason, r.Changed = Running, "", now
	r.Epoch++
	r.Step(now)
	return nil
}

// Abort ends the rollout: the target is offered to no device again.
// Results already reported stay.
func (r *Rollout) Abort(reason string, now time.Time) error {
	if r.State == Aborted || r.State == Done {
		return fmt.Errorf("%w: aborting a rollout that is %s", ErrState, r.State)
	}
	r.State, r.Reason, r.Changed = Aborted, clip(reason), now
	return nil
}

// clip bounds a reason an operator gave, at a character boundary, with
// what a page would hide shown (safetext.Clip).
func clip(s string) string { return safetext.Clip(s, MaxReason) }
