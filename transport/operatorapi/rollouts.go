package operatorapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/torpor-dev/torpor/transport/bearer"
)

// RolloutsPath is the operator endpoints' root for rollouts
// (transport/relay, rollouts.go):
//
//	POST {RolloutsPath}                  start (body RolloutStart)
//	GET  {RolloutsPath}                  every rollout (RolloutList)
//	GET  {RolloutsPath}/{id}             one (Rollout)
//	POST {RolloutsPath}/{id}/{action}    pause, resume, abort (body RolloutAction)
const RolloutsPath = "/operator/rollouts"

// TenantRolloutsPath is the root of the rollouts of the tenant whose
// owner DID is owner, on a hosted relay (docs/tenants.md), with the
// endpoints of RolloutsPath under it. Only the operators the owner named
// may use them, and a tenant's rollout takes only the tenant's devices.
func TenantRolloutsPath(owner string) string {
	return "/operator/tenants/" + url.PathEscape(owner) + "/rollouts"
}

// rolloutsPath is the root of c's rollouts: its tenant's, or the
// relay's.
func (c *Client) rolloutsPath() string {
	if c.Tenant != "" {
		return TenantRolloutsPath(c.Tenant)
	}
	return RolloutsPath
}

// RolloutTarget is the build a rollout offers: its TUF target name,
// version and SHA-256 (hex).
type RolloutTarget struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	SHA256  string `json:"sha256,omitempty"`
}

// RolloutCriteria are a rollout's abort criteria, named as AWS IoT Jobs
// names them (docs/updates.md, "Rollouts").
type RolloutCriteria struct {
	FailureTypes     []string `json:"failure_types,omitempty"`
	MinExecuted      int      `json:"min_executed,omitempty"`
	ThresholdPercent float64  `json:"threshold_percent,omitempty"`
}

// RolloutStart starts a rollout. Devices are agent DIDs; empty means every
// device the relay holds a state of (that the caller may act on), or for
// a tenant's rollout every device of the tenant.
type RolloutStart struct {
	ID       string          `json:"id"`
	Target   RolloutTarget   `json:"target"`
	Percents []int           `json:"percents,omitempty"`
	Criteria RolloutCriteria `json:"criteria"`
	// WaveTime is a wave's longest time, in seconds; 0 means an hour.
	WaveTime int64    `json:"wave_time_seconds,omitempty"`
	Devices  []string `json:"devices,omitempty"`
}

// RolloutAction is the body of a pause, resume or abort.
type RolloutAction struct {
	Reason string `json:"reason,omitempty"`
}

// RolloutCounts are devices by outcome: pending ones are offered and have
// not reported, waiting ones are in a wave not started. The relay counts
// its rollouts in this type (transport/relay/rollout's Counts).
type RolloutCounts struct {
	Devices    int `json:"devices"`
	Installed  int `json:"installed"`
	RolledBack int `json:"rolled_back"`
	Refused    int `json:"refused"`
	Pending    int `json:"pending"`
	Waiting    int `json:"waiting"`
	// Left is the devices that left the rollout before they reported:
	// forgotten by the relay for their silence, or out of a tenant's
	// rollout's tenant; they are offered nothing more.
	Left int `json:"left,omitempty"`
}

// Failed is the devices that reported anything but installed.
func (c RolloutCounts) Failed() int { return c.RolledBack + c.Refused }

// RolloutWave is one wave: its cumulative percent, its cohorts (seconds of
// the hour), when it started (zero: not yet) and its counts.
type RolloutWave struct {
	Percent int           `json:"percent"`
	Cohorts []int         `json:"cohorts"`
	Started time.Time     `json:"started,omitzero"`
	Counts  RolloutCounts `json:"counts"`
}

// RolloutFailure is one device that reported anything but installed, or
// left the rollout (outcome "left").
type RolloutFailure struct {
	Device  string    `json:"device"`
	Outcome string    `json:"outcome"`
	Reason  string    `json:"reason,omitempty"`
	At      time.Time `json:"at"`
}

// Rollout is the relay's view of one rollout.
type Rollout struct {
	ID       string           `json:"id"`
	Target   RolloutTarget    `json:"target"`
	State    string           `json:"state"`
	Reason   string           `json:"reason,omitempty"`
	Criteria RolloutCriteria  `json:"criteria"`
	Created  time.Time        `json:"created"`
	Changed  time.Time        `json:"changed"`
	Wave     int              `json:"wave"`
	Waves    []RolloutWave    `json:"waves"`
	Counts   RolloutCounts    `json:"counts"`
	Failures []RolloutFailure `json:"failures,omitempty"`
}

// RolloutList is every rollout of the relay's own operators, or of one
// tenant.
type RolloutList struct {
	Rollouts []Rollout `json:"rollouts"`
}

// StartRollout starts s on the relay and returns it as planned, with the
// relay's JSON.
func (c *Client) StartRollout(ctx context.Context, s RolloutStart) (Rollout, []byte, error) {
	var r Rollout
	raw, err := c.rollouts(ctx, http.MethodPost, c.rolloutsPath(), s, &r)
	return r, raw, err
}

// Rollouts lists the relay's rollouts.
func (c *Client) Rollouts(ctx context.Context) (RolloutList, []byte, error) {
	var l RolloutList
	raw, err := c.rollouts(ctx, http.MethodGet, c.rolloutsPath(), nil, &l)
	return l, raw, err
}

// GetRollout returns rollout id.
func (c *Client) GetRollout(ctx context.Context, id string) (Rollout, []byte, error) {
	var r Rollout
	raw, err := c.rollouts(ctx, http.MethodGet, c.rolloutsPath()+"/"+url.PathEscape(id), nil, &r)
	return r, raw, err
}

// ChangeRollout pauses, resumes or aborts rollout id (action "pause",
// "resume" or "abort").
func (c *Client) ChangeRollout(ctx context.Context, id, action, reason string) (Rollout, []byte, error) {
	var r Rollout
	raw, err := c.rollouts(ctx, http.MethodPost, c.rolloutsPath()+"/"+url.PathEscape(id)+"/"+action, RolloutAction{Reason: reason}, &r)
	return r, raw, err
}

// rollouts calls the relay at path with body as JSON (none when nil) and
// decodes a 200 answer into out; any other is an error with the relay's
// reason.
func (c *Client) rollouts(ctx context.Context, method, path string, body, out any) ([]byte, error) {
	tok, err := c.OperatorToken(method, path)
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Origin+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", bearer.Authorization(tok))
	req.Header.Set("Content-Type", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e QueueAnswer // the same error members
		json.Unmarshal(raw, &e)
		return nil, fmt.Errorf("relay answered %d %s: %s", resp.StatusCode, http.StatusText(resp.StatusCode), e.reason(raw))
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("relay's answer: %v", err)
	}
	return raw, nil
}

// DeviceUpdate is one rollout's offer to a device, as the fleet console's
// device page shows it: the outcome the device reported ("pending" while
// it has not), the rollout's state.
type DeviceUpdate struct {
	Rollout string    `json:"rollout"`
	Version string    `json:"version"`
	State   string    `json:"state"`
	Outcome string    `json:"outcome"`
	Reason  string    `json:"reason,omitempty"`
	At      time.Time `json:"at,omitzero"`
}
