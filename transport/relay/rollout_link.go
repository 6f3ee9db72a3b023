package relay

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/torpor-dev/torpor/governed"
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
	id, t, ok, err := s.rollouts.OfferID(ctx, agent)
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

// runningReason is the reason of an Installed outcome read from the
// version a device runs rather than from an install it reported.
const runningReason = "runs this version"

// statusOutcomes are the outcomes a device's status reports: its last
// install's (statusOutcome), and Installed for the version it runs, so
// that a device already running a rollout's target (installed before the
// rollout, or by hand) is not pending for ever. The second is left out
// when the first names the running version.
func statusOutcomes(status []byte) []outcome {
	var out []outcome
	o, ok := statusOutcome(status)
	if ok {
		out = append(out, o)
	}
	if v := runningVersion(status); v != "" && (!ok || o.version != v) {
		out = append(out, outcome{version: v, outcome: rollout.Installed, reason: runningReason})
	}
	return out
}

// runningVersion is the version member of a signed status ("" when
// there is none).
func runningVersion(status []byte) string {
	if status == nil {
		return ""
	}
	o, err := governed.Parse(status)
	if err != nil {
		return ""
	}
	var p struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(o.Payload, &p) != nil {
		return ""
	}
	return p.Version
}

// outcome is a status's report of the device's last install.
type outcome struct {
	version string
	outcome rollout.Outcome
	reason  string
}

// statusOutcome reads the install outcome from a device's signed status
// (verified when it was published: nextState): its payload's "update"
// member. It reads the member as the device's A/B install
// (runtime/update/slots) writes it, result "installed" or "rolled-back",
// and as the TUF client (runtime/update) writes a refusal, outcome
// "refused"; a version may be a string or a number. Any other outcome
// (up to date, verified and not yet installed) is no report.
func statusOutcome(status []byte) (outcome, bool) {
	if status == nil {
		return outcome{}, false
	}
	o, err := governed.Parse(status)
	if err != nil {
		return outcome{}, false
	}
	var p struct {
		Update *struct {
			Result  string          `json:"result"`
			Outcome string          `json:"outcome"`
			Version json.RawMessage `json:"version"`
			Reason  string          `json:"reason"`
		} `json:"update"`
	}
	if json.Unmarshal(o.Payload, &p) != nil || p.Update == nil {
		return outcome{}, false
	}
	u := p.Update
	res := rollout.Outcome(u.Result)
	if res == "" {
		res = rollout.Outcome(u.Outcome)
	}
	if res != rollout.Installed && res != rollout.RolledBack && res != rollout.Refused {
		return outcome{}, false
	}
	v := string(u.Version)
	if s, err := strconv.Unquote(v); err == nil {
		v = s
	}
	if v == "" || v == "null" {
		return outcome{}, false
	}
	return outcome{version: v, outcome: res, reason: u.Reason}, true
}
