package relay

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/relay/rollout"
)

// rolloutWake is a device's wake as the rollouts see it: its signed
// status's last install outcome is reported to the rollouts of that
// version, then the update a rollout offers it is returned for its
// state-ok (nil for none). status is the status the device published at
// this wake (nil: unchanged). A rollouts store that fails costs the
// device its offer, never its state: the failure is logged.
func (s *Relay) rolloutWake(ctx context.Context, agent string, status []byte) *wire.Offer {
	if s.rollouts == nil {
		return nil
	}
	for _, out := range statusOutcomes(status) {
		found, err := s.rollouts.Report(ctx, agent, out.version, out.outcome, out.reason)
		if err != nil {
			s.log.Error("rollouts: a device's update outcome was not recorded", "agent", agent, "version", out.version, "err", err)
		} else if found {
			s.metrics.updateReports.WithLabelValues(string(out.outcome)).Inc()
		}
	}
	id, t, ok, err := s.rollouts.OfferIDOf(ctx, agent, s.inTenant(agent))
	if err != nil {
		s.log.Error("rollouts: no offer for a device", "agent", agent, "err", err)
		return nil
	}
	if !ok {
		return nil
	}
	s.metrics.updateOffers.Inc()
	return &wire.Offer{Rollout: id, Target: t.Name, Version: t.Version, SHA256: t.SHA256}
}

// inTenant returns the check of the rollouts that may offer agent a
// target: the relay's own (tenant ""), whose start took only the devices
// its operator could act on, and a tenant's only while agent is in that
// tenant, so that a device that left the tenant after the rollout started
// (forgotten, then enrolled elsewhere) is not offered its build. The
// device's tenant is read once, when a tenant's rollout first asks.
func (s *Relay) inTenant(agent string) func(tenant string) (bool, error) {
	var owner string
	read := false
	return func(tenant string) (bool, error) {
		if tenant == "" {
			return true, nil
		}
		if !read {
			o, err := s.tenantOfAgent(agent)
			if err != nil {
				return false, err
			}
			owner, read = o, true
		}
		return owner == tenant, nil
	}
}

// tenantOfAgent is the owner DID of agent's tenant; empty for a device in
// none (or a relay without tenants).
func (s *Relay) tenantOfAgent(agent string) (string, error) {
	dev, err := did.Parse(agent)
	if err != nil || s.cfg.Stores.Tenants == nil {
		return "", nil
	}
	owner, in, err := s.cfg.Stores.Tenants.TenantOf(dev)
	if err != nil || !in {
		return "", err
	}
	return owner.String(), nil
}

// runningReason is the reason of an Installed outcome read from the
// version a device runs rather than from an install it reported.
const runningReason = "runs this version"

// outcome is a status's report of one target: its version (or TUF
// target name, for a refusal) and what the device did with it.
type outcome struct {
	version string
	outcome rollout.Outcome
	reason  string
}

// downloadPaused are the reasons of a refusal that only pauses the
// download (runtime/update reason.go): the wake's byte budget is spent
// (budget) or the link failed while fetching (fetch), and the next wake
// resumes it. They are no outcome: the device stays pending, and is
// offered the target again, so that a download spanning several wakes,
// or cut off with its wake, is not counted refused for ever.
var downloadPaused = map[string]bool{"budget": true, "fetch": true}

// statusOutcomes are the outcomes a device's signed status reports (it
// was verified when it was published: nextState): its last install
// (wire.StatusInstall, from runtime/update/slots: installed or rolled back,
// by the build's version), a refusal of its update check
// (wire.StatusUpdate with outcome refused, by the TUF target's name), and
// Installed for the version it runs, so that a device already running a
// rollout's target (flashed with it, or installed before the rollout) is
// not pending for ever; the last is left out when the install names the
// running version. Up to date, verified (not installed yet), held for the
// owner, waiting for the running build's trial and a paused download
// (downloadPaused) are no outcome.
func statusOutcomes(status []byte) []outcome {
	st, ok := payload(status)
	if !ok {
		return nil
	}
	var out []outcome
	in := st.Install
	if in != nil {
		out = append(out, outcome{version: in.Version, outcome: rollout.Outcome(in.Result), reason: in.Reason})
	}
	if u := st.Update; u != nil && u.Outcome == wire.UpdateRefused && u.Target != "" && !downloadPaused[u.Reason] {
		out = append(out, outcome{version: u.Target, outcome: rollout.Refused, reason: strings.TrimSpace(u.Reason + ": " + u.Detail)})
	}
	if st.Version != "" && (in == nil || in.Version != st.Version) {
		out = append(out, outcome{version: st.Version, outcome: rollout.Installed, reason: runningReason})
	}
	return out
}

// payload is the status in a device's signed status bytes.
func payload(status []byte) (wire.Status, bool) {
	if status == nil {
		return wire.Status{}, false
	}
	o, err := governed.Parse(status)
	if err != nil {
		return wire.Status{}, false
	}
	st, err := wire.ParseStatus(o.Payload)
	return st, err == nil
}

// rolloutsForget records, in every rollout that holds agent without a
// report (the relay's own and its tenants'), that the relay forgot it
// for its silence (rollout.Manager.Forget), so that they can end without
// it; a failure is logged, and the agent stays pending there.
func (s *Relay) rolloutsForget(ctx context.Context, agent string) {
	if s.rollouts == nil {
		return
	}
	if _, err := s.rollouts.Forget(ctx, agent, "forgotten for its silence"); err != nil {
		s.log.Error("rollouts: a forgotten device is still pending in its rollouts", "agent", agent, "err", err)
	}
}

// outOfTenantReason is the reason of a device that its tenant's ledger no
// longer holds, found by rolloutsOutOfTenant.
const outOfTenantReason = "taken out of the tenant"

// rolloutsOutOfTenant records as left, in each running or paused tenant's
// rollout, the devices without a report that the tenant's ledger no
// longer holds (rollout.Manager.LeaveTenants): a device taken out of its
// tenant by hand (its ledger entry removed, not by the relay's
// forgetting) may never wake to be found out of it, and its rollouts end
// without it. A retired device (its state names a successor) is left to
// carryRollouts, which gives its place to the successor, and a device
// whose state cannot be read stays as it is. A failure is logged; the
// next pass of Run tries again.
func (s *Relay) rolloutsOutOfTenant(ctx context.Context) {
	if s.rollouts == nil || s.cfg.Stores.Tenants == nil {
		return
	}
	members := func(tenant string) (func(string) bool, error) {
		owner, err := did.Parse(tenant)
		if err != nil {
			return nil, fmt.Errorf("rollout tenant %q: %w", tenant, err)
		}
		devs, err := s.cfg.Stores.Tenants.Devices(owner)
		if err != nil {
			return nil, err
		}
		in := make(map[string]bool, len(devs))
		for _, d := range devs {
			in[d] = true
		}
		return func(d string) bool {
			if in[d] {
				return true
			}
			st, err := s.cfg.Stores.States.Get(ctx, d)
			return err == nil && st.Successor != "" || err != nil && !errors.Is(err, agents.ErrUnknownAgent)
		}, nil
	}
	n, err := s.rollouts.LeaveTenants(ctx, members, outOfTenantReason)
	if err != nil && ctx.Err() == nil {
		s.log.Error("rollouts: devices taken out of their tenant may still be pending", "err", err)
	}
	if n > 0 {
		s.log.Info("rollouts: devices taken out of their tenant left its rollouts", "devices", n)
	}
}

// carryRollouts gives a retired agent's place in every rollout to its
// successor, the same device under its new key (rollout.Manager.Carry);
// a failure is logged, and the successor is then in none of them.
func (s *Relay) carryRollouts(ctx context.Context, old, successor string) {
	if s.rollouts == nil {
		return
	}
	if _, err := s.rollouts.Carry(ctx, old, successor); err != nil {
		s.log.Error("rollouts: the successor of a retired agent is not in its rollouts", "agent", old, "successor", successor, "err", err)
	}
}
