package relay

import (
	"slices"
	"strings"

	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/transport/relay/rollout"
)

// maxViewFailures bounds the failures a rollout's view lists (the most
// recent first); the counts hold them all.
const maxViewFailures = 100

// rolloutView is ro as the operator API shows it.
func rolloutView(ro *rollout.Rollout) operatorapi.Rollout {
	v := operatorapi.Rollout{
		ID: ro.ID, Target: operatorapi.RolloutTarget{Name: ro.Target.Name, Version: ro.Target.Version, SHA256: ro.Target.SHA256},
		State: string(ro.State), Reason: ro.Reason, Created: ro.Created, Changed: ro.Changed, Wave: ro.Wave,
		Criteria: operatorapi.RolloutCriteria{FailureTypes: ro.Criteria.FailureTypes, MinExecuted: ro.Criteria.MinExecuted, ThresholdPercent: ro.Criteria.ThresholdPercent},
		Counts:   countsView(ro.Counts()),
	}
	for i, w := range ro.Waves {
		v.Waves = append(v.Waves, operatorapi.RolloutWave{Percent: w.Percent, Cohorts: w.Cohorts, Started: w.Started, Counts: countsView(ro.WaveCounts(i))})
	}
	for d, res := range ro.Results {
		if res.Outcome != rollout.Installed {
			v.Failures = append(v.Failures, operatorapi.RolloutFailure{Device: d, Outcome: string(res.Outcome), Reason: res.Reason, At: res.At})
		}
	}
	slices.SortFunc(v.Failures, func(a, b operatorapi.RolloutFailure) int {
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return strings.Compare(a.Device, b.Device)
	})
	if len(v.Failures) > maxViewFailures {
		v.Failures = v.Failures[:maxViewFailures]
	}
	return v
}

func countsView(c rollout.Counts) operatorapi.RolloutCounts {
	return operatorapi.RolloutCounts{Devices: c.Devices, Installed: c.Installed, RolledBack: c.RolledBack, Refused: c.Refused, Pending: c.Pending, Waiting: c.Waiting}
}
