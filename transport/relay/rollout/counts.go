package rollout

import "github.com/torpor-dev/torpor/transport/operatorapi"

// Counts are a rollout's or a wave's devices by what they reported, as
// the operator API carries them (operatorapi.RolloutCounts, which torporctl
// reads too). Pending devices are in a started wave without a report;
// Waiting ones are in a wave not started yet; Left ones left the rollout
// before they reported (Rollout.Leave: forgotten by the relay, or out of
// a tenant's rollout's tenant).
type Counts = operatorapi.RolloutCounts

// WaveCounts returns the counts of wave i.
func (r *Rollout) WaveCounts(i int) Counts {
	var c Counts
	for _, d := range r.Waves[i].Devices {
		c.Devices++
		res, ok := r.Results[d]
		switch {
		case !ok && i > r.Wave:
			c.Waiting++
		case !ok:
			c.Pending++
		case res.Outcome == Installed:
			c.Installed++
		case res.Outcome == RolledBack:
			c.RolledBack++
		case res.Outcome == Left:
			c.Left++
		default:
			c.Refused++
		}
	}
	return c
}

// Counts returns the counts of all the rollout's devices.
func (r *Rollout) Counts() Counts {
	var t Counts
	for i := range r.Waves {
		c := r.WaveCounts(i)
		t.Devices += c.Devices
		t.Installed += c.Installed
		t.RolledBack += c.RolledBack
		t.Refused += c.Refused
		t.Pending += c.Pending
		t.Waiting += c.Waiting
		t.Left += c.Left
	}
	return t
}
