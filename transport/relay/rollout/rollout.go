package rollout

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/store/rollouts"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// Target is what a rollout offers: a build of the agent as the relay's
// update repository names it (its TUF target path, version and the
// SHA-256 of its content, hex).
type Target struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	SHA256  string `json:"sha256,omitempty"`
}

// Outcome is what a device reported of the target in its signed status.
type Outcome string

// The outcomes a device reports, Pending for none yet, and Left, which
// the relay records (Rollout.Leave) for a device it forgot for its
// silence, or for a device of a tenant's rollout that left the tenant: it
// is offered the target no more, counts as
// reported for the waves and the rollout's end, and is no failure for the
// criteria.
const (
	Pending    Outcome = ""
	Installed  Outcome = "installed"
	RolledBack Outcome = "rolled-back"
	Refused    Outcome = "refused"
	Left       Outcome = "left"
)

// FailureAll is the failure type that counts every outcome but Installed
// (AWS IoT Jobs' ALL).
const FailureAll = "all"

// State is a rollout's state.
type State string

// The states of a rollout.
const (
	Running State = "running"
	Paused  State = "paused"
	Aborted State = "aborted"
	// Done: every wave started and every device reported.
	Done State = "done"
)

// Criteria say when a rollout pauses on its own (see the package doc).
// The zero value never pauses it.
type Criteria struct {
	// FailureTypes are the outcomes that count as failures: RolledBack,
	// Refused, or FailureAll. Empty means FailureAll.
	FailureTypes []string `json:"failure_types,omitempty"`
	// MinExecuted is how many devices must have reported (since the last
	// resume) before the rate is judged.
	MinExecuted int `json:"min_executed,omitempty"`
	// ThresholdPercent is the failure rate, in percent of the devices that
	// reported, at or above which the rollout pauses; 0 never pauses.
	ThresholdPercent float64 `json:"threshold_percent,omitempty"`
}

// Spec is what an operator starts.
type Spec struct {
	ID string `json:"id"`
	// Tenant is the owner DID of the tenant whose operators run the
	// rollout over its devices on a hosted relay (docs/tenants.md); empty
	// for a rollout of the relay's own operators. The rollout is stored
	// under rollouts.Key(Tenant, ID).
	Tenant string `json:"tenant,omitempty"`
	Target Target `json:"target"`
	// Percents are the waves' cumulative shares of the devices, strictly
	// increasing, the last 100. Nil means DefaultPercents.
	Percents []int    `json:"percents,omitempty"`
	Criteria Criteria `json:"criteria"`
	// WaveTime is how long a wave runs before the next starts even if some
	// of its devices have not reported; zero means DefaultWaveTime.
	WaveTime time.Duration `json:"wave_time,omitempty"`
}

// DefaultPercents are the waves of a Spec without Percents.
var DefaultPercents = []int{1, 10, 50, 100}

// DefaultWaveTime is a wave's time when Spec.WaveTime is zero: every
// device of an hourly window wakes once in it.
const DefaultWaveTime = time.Hour

// MaxDevices bounds a rollout's devices, so that its record fits the
// store (rollouts.MaxRecord).
const MaxDevices = 5000

// Device is a device a rollout may offer the target to, with where in the
// hour its window opens.
type Device struct {
	ID     string `json:"id"`
	Minute int    `json:"minute"`
	Second int    `json:"second"`
}

// Wave is one wave of a plan: the cohorts it adds (seconds of the hour
// at which they wake, in waking order), its devices, and when it started.
type Wave struct {
	Percent int       `json:"percent"`
	Cohorts []int     `json:"cohorts"`
	Devices []string  `json:"devices"`
	Started time.Time `json:"started,omitzero"`
}

// Result is one device's report.
type Result struct {
	Outcome Outcome   `json:"outcome"`
	Reason  string    `json:"reason,omitempty"`
	At      time.Time `json:"at"`
	// Epoch is the rollout's Epoch when it was reported.
	Epoch int `json:"epoch"`
}

// Rollout is one rollout's record.
type Rollout struct {
	Spec
	State   State     `json:"state"`
	Reason  string    `json:"reason,omitempty"`
	Created time.Time `json:"created"`
	Changed time.Time `json:"changed"`
	Waves   []Wave    `json:"waves"`
	// Wave is the index of the last wave started.
	Wave int `json:"wave"`
	// Epoch counts resumes: the criteria judge the results of the current
	// epoch only.
	Epoch   int               `json:"epoch"`
	Results map[string]Result `json:"results"`
}

// MaxReason bounds a result's and a rollout's reason.
const MaxReason = 512

func (s *Spec) check() error {
	if err := rollouts.CheckID(s.ID); err != nil {
		return fmt.Errorf("%w: %v", ErrBadSpec, err)
	}
	if err := s.Target.check(); err != nil {
		return err
	}
	if s.Percents == nil {
		s.Percents = slices.Clone(DefaultPercents)
	}
	for i, p := range s.Percents {
		if p < 1 || p > 100 || i > 0 && p <= s.Percents[i-1] {
			return fmt.Errorf("%w: wave percents %v: each of 1–100, strictly increasing", ErrBadSpec, s.Percents)
		}
	}
	if len(s.Percents) == 0 || s.Percents[len(s.Percents)-1] != 100 {
		return fmt.Errorf("%w: wave percents %v: the last wave must be 100", ErrBadSpec, s.Percents)
	}
	if s.WaveTime < 0 {
		return fmt.Errorf("%w: a negative wave time", ErrBadSpec)
	}
	if s.WaveTime == 0 {
		s.WaveTime = DefaultWaveTime
	}
	return s.Criteria.check()
}

// check refuses a target no device could take from an offer: a member
// missing or longer than the link's offer takes (wire.Offer.Check, which
// would fail every device's state-ok), or a SHA-256 not in the
// lower-case hex the device compares with its targets metadata's.
func (t Target) check() error {
	if t.Name == "" || t.Version == "" {
		return fmt.Errorf("%w: a target needs a name and a version", ErrBadSpec)
	}
	for _, m := range [][2]string{{"name", t.Name}, {"version", t.Version}, {"SHA-256", t.SHA256}} {
		if len(m[1]) > wire.MaxOfferMember {
			return fmt.Errorf("%w: the target's %s is %d bytes, more than an offer carries (%d)", ErrBadSpec, m[0], len(m[1]), wire.MaxOfferMember)
		}
	}
	if t.SHA256 != "" && (len(t.SHA256) != 2*sha256.Size || strings.Trim(t.SHA256, "0123456789abcdef") != "") {
		return fmt.Errorf("%w: the target's SHA-256 %q is not 64 lower-case hex digits", ErrBadSpec, t.SHA256)
	}
	return nil
}

func (c Criteria) check() error {
	for _, f := range c.FailureTypes {
		if f != string(RolledBack) && f != string(Refused) && f != FailureAll {
			return fmt.Errorf("%w: failure type %q (want %s, %s or %s)", ErrBadSpec, f, RolledBack, Refused, FailureAll)
		}
	}
	if c.ThresholdPercent < 0 || c.ThresholdPercent > 100 || c.MinExecuted < 0 {
		return fmt.Errorf("%w: threshold %v %% (0–100) or minimum executed %d (≥ 0)", ErrBadSpec, c.ThresholdPercent, c.MinExecuted)
	}
	return nil
}

// Plan returns a new rollout of spec over devices, started at now: its
// waves planned (see the package doc) and its first wave started.
func Plan(spec Spec, devices []Device, now time.Time) (*Rollout, error) {
	if err := spec.check(); err != nil {
		return nil, err
	}
	if len(devices) == 0 || len(devices) > MaxDevices {
		return nil, fmt.Errorf("%w: %d devices, want 1 to %d", ErrBadSpec, len(devices), MaxDevices)
	}
	waves, err := planWaves(spec.Percents, devices, now)
	if err != nil {
		return nil, err
	}
	r := &Rollout{Spec: spec, State: Running, Created: now, Changed: now, Waves: waves, Results: map[string]Result{}}
	r.Waves[0].Started = now
	return r, nil
}

// Key is the key r is stored under (rollouts.Key), which Manager's Get,
// Pause, Resume and Abort take.
func (r *Rollout) Key() string { return rollouts.Key(r.Tenant, r.ID) }

// WaveOf returns the index of the wave device is in, or -1.
func (r *Rollout) WaveOf(device string) int {
	for i, w := range r.Waves {
		if slices.Contains(w.Devices, device) {
			return i
		}
	}
	return -1
}
