package relay

import (
	"context"
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
		Counts:   ro.Counts(),
	}
	for i, w := range ro.Waves {
		v.Waves = append(v.Waves, operatorapi.RolloutWave{Percent: w.Percent, Cohorts: w.Cohorts, Started: w.Started, Counts: ro.WaveCounts(i)})
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

// consoleRollouts is console.Rollouts over the relay's rollouts.
type consoleRollouts struct{ m *rollout.Manager }

// Rollouts implements console.Rollouts: the rollouts of the relay's own
// operators, whose page it is (console.serveRollouts); a tenant's
// rollouts are its operators' (GET /operator/tenants/{owner}/rollouts),
// and the host sees none of them.
func (c consoleRollouts) Rollouts(ctx context.Context) ([]operatorapi.Rollout, error) {
	rs, err := c.m.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]operatorapi.Rollout, 0, len(rs))
	for _, r := range rs {
		if r.Tenant == "" {
			out = append(out, rolloutView(r))
		}
	}
	return out, nil
}

// DeviceUpdates implements console.Rollouts: the rollouts whose started
// waves hold device, the newest first (a tenant's, for a device of the
// tenant: the console shows a device's page only to who may see it).
func (c consoleRollouts) DeviceUpdates(ctx context.Context, device string) ([]operatorapi.DeviceUpdate, error) {
	rs, err := c.m.List(ctx)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(rs, func(a, b *rollout.Rollout) int { return b.Created.Compare(a.Created) })
	var out []operatorapi.DeviceUpdate
	for _, r := range rs {
		if w := r.WaveOf(device); w < 0 || w > r.Wave {
			continue
		}
		u := operatorapi.DeviceUpdate{Rollout: r.ID, Version: r.Target.Version, State: string(r.State), Outcome: "pending"}
		if res, ok := r.Results[device]; ok {
			u.Outcome, u.Reason, u.At = string(res.Outcome), res.Reason, res.At
		}
		out = append(out, u)
	}
	return out, nil
}
