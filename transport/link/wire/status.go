package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// PurposeStatus is the purpose of a State.Status: a Governed Object
// (package governed; draft Section 5) the device issues and signs with its
// DID's key at each wake, whose payload is a Status.
const PurposeStatus = "torpor:device-status"

// StatusSchema is the semantic schema (draft Section 5.2) of a status.
const StatusSchema = "https://torpor.dev/schemas/device-status/v1"

// MaxStatus caps the size of a signed status.
const MaxStatus = 16 << 10

// MaxStatusHeld caps Status.Held; HeldCount counts them all.
const MaxStatusHeld = 32

// MaxStatusLost caps Status.Lost; LostCount counts them all.
const MaxStatusLost = 32

// MaxInterface caps StatusWiFi.Interface (Linux's IFNAMSIZ is 16 with
// the terminating NUL).
const MaxInterface = 15

// Status is what a device tells its relay about itself for the operators'
// fleet console (transport/relay/console) beyond what the relay sees:
// held actions, possibly lost hand-offs, halt, its build, its board and
// its last wake.
//
// Readers ignore members they do not know (ParseStatus uses
// encoding/json's default), so a member added with omitempty is accepted
// by older relays and consoles, which only do not show it. It travels
// as the payload of a signed Governed Object in State.Status, so that the
// relay (and every relay of a fleet sharing its store) can check that the
// device said it.
type Status struct {
	// Version is the agent's build (internal/version Info.Short).
	Version string `json:"version"`
	// Board is the board profile the agent runs with ("" when none).
	Board string `json:"board,omitempty"`
	// Halted is true while the owner's halt is in force.
	Halted bool `json:"halted,omitempty"`
	// HeldCount counts the actions waiting for the owner's confirmation;
	// Held lists the first MaxStatusHeld of them.
	HeldCount int          `json:"heldCount"`
	Held      []StatusHeld `json:"held,omitempty"`
	// LostCount counts the hand-offs to the application that a crash may
	// have cut off with at-most-once notify, as the device's ledger keeps
	// them (store/ledger Lost); Lost lists the newest MaxStatusLost of
	// them, newest first.
	LostCount int          `json:"lostCount,omitempty"`
	Lost      []StatusLost `json:"lost,omitempty"`
	// Wake is the wake that publishes this status (its start and reason).
	Wake *StatusWake `json:"wake,omitempty"`
	// LastWake is the last completed wake before it, with its phases.
	LastWake *StatusWake `json:"lastWake,omitempty"`
	// Health is what the board could measure of itself at this wake
	// (runtime/health); nil when it measured nothing, and from agents
	// older than the member.
	Health *StatusHealth `json:"health,omitempty"`
	// Install is the outcome of the agent's last install of a new build
	// (runtime/update/slots): installed, or rolled back and why; nil
	// before the first, and from agents older than the member.
	Install *StatusInstall `json:"install,omitempty"`
	// Update is the outcome of the wake's update check (runtime/update):
	// a verified target, nothing newer, or why nothing is installed. Nil
	// when the agent checked none, and from agents older than the member.
	Update *StatusUpdate `json:"update,omitempty"`
	// OSUpdate is the wake's check for operating-system bundles (targets
	// of type rauc-bundle, runtime/update/rauc), as Update; OSInstall the
	// outcome of the last bundle handed to rauc: InstallInstalled or
	// InstallFailed and why. Nil on agents without rauc, and from agents
	// older than the members.
	OSUpdate  *StatusUpdate  `json:"osUpdate,omitempty"`
	OSInstall *StatusInstall `json:"osInstall,omitempty"`
}

// MaxStatusUpdateDetail caps StatusUpdate.Detail, MaxStatusUpdateTarget
// StatusUpdate.Target.
const (
	MaxStatusUpdateDetail = 512
	MaxStatusUpdateTarget = 256
)

// The outcomes of StatusUpdate.
const (
	UpdateUpToDate = "up-to-date"
	UpdateVerified = "verified"
	UpdateRefused  = "refused"
	// UpdateHeld: a verified file waits for the owner's confirmation
	// (Reason "needs-confirmation"): no outcome yet, so a rollout keeps
	// the device pending. Relays that predate it count it as no outcome
	// too (they act on UpdateRefused only).
	UpdateHeld = "held"
	// UpdateWaiting: a verified file of an offered target waits for the
	// trial of the build the device runs to end (Reason "trial"): the
	// device installs it once that build proved itself or was rolled
	// back. No outcome yet either: a rollout keeps the device pending
	// and offers it the target again.
	UpdateWaiting = "waiting"
)

// StatusUpdate is one update check as the device reports it.
type StatusUpdate struct {
	// Outcome is UpdateUpToDate, UpdateVerified (a file whose length and
	// hashes are the target's is ready to install), UpdateHeld (verified,
	// waiting for the owner's confirmation), UpdateWaiting (verified,
	// waiting for the running build's trial to end) or UpdateRefused.
	Outcome string `json:"outcome"`
	// Target and Version name the target checked, when there is one.
	Target  string `json:"target,omitempty"`
	Version uint64 `json:"version,omitempty"`
	// Reason is runtime/update's Code when refused ("freeze",
	// "mix-and-match", "expired", ...); Detail says it in a sentence.
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Bytes counts the target's bytes fetched in this wake.
	Bytes int64 `json:"bytes,omitempty"`
}

// StatusInstall is the outcome of the last install of a new agent build.
type StatusInstall struct {
	// Result is InstallInstalled or InstallRolledBack.
	Result string `json:"result"`
	// Version is the build installed or rolled back, From the one that
	// ran before it.
	Version string `json:"version"`
	From    string `json:"from,omitempty"`
	// Reason says why a build was rolled back (at most MaxInstallReason
	// bytes).
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// The results of a StatusInstall.
const (
	InstallInstalled  = "installed"
	InstallRolledBack = "rolled-back"
	// InstallFailed is an OSInstall's result only: rauc refused or failed
	// the bundle (there is no trial to roll back).
	InstallFailed = "failed"
)

// MaxInstallReason caps StatusInstall.Reason.
const MaxInstallReason = 1024

// StatusHealth is the board's health as the device measured it at the
// wake. Every member is optional: one the board cannot measure, or whose
// reading failed, is absent. Values are integers in the units their names
// say (draft Section 5.3 prefers integers).
type StatusHealth struct {
	// UptimeS is the seconds since the device booted (/proc/uptime).
	UptimeS int64 `json:"uptimeS,omitempty"`
	// CPUMilliC is the CPU's temperature in thousandths of a degree
	// Celsius (a thermal zone's temp); a pointer, since 0 °C is a reading.
	CPUMilliC *int64 `json:"cpuMilliC,omitempty"`
	// Flash is the free and total space of the agent's data directory's
	// file system.
	Flash *StatusFlash `json:"flash,omitempty"`
	// SupplyMV is the supply or battery voltage in millivolts, from the
	// source the board profile or configuration names.
	SupplyMV int64 `json:"supplyMv,omitempty"`
	// Throttled is the Raspberry Pi firmware's get_throttled flags (see
	// ThrottledUnderVoltageNow); nil where the firmware reports none.
	Throttled *uint32 `json:"throttled,omitempty"`
	// WiFi is the wireless link's quality where the kernel reports it.
	WiFi *StatusWiFi `json:"wifi,omitempty"`
}

// The bits of StatusHealth.Throttled, as the Raspberry Pi documentation
// gives them for vcgencmd get_throttled
// (https://www.raspberrypi.com/documentation/computers/os.html#get_throttled).
const (
	ThrottledUnderVoltageNow  = 1 << 0
	ThrottledNow              = 1 << 2
	ThrottledUnderVoltageSeen = 1 << 16
	ThrottledSeen             = 1 << 18
)

// UnderVoltage reports whether the firmware found the supply below its
// threshold now (now) or at any time since boot (seen); both false when
// it reports nothing.
func (h *StatusHealth) UnderVoltage() (now, seen bool) {
	if h == nil || h.Throttled == nil {
		return false, false
	}
	t := *h.Throttled
	return t&ThrottledUnderVoltageNow != 0, t&(ThrottledUnderVoltageNow|ThrottledUnderVoltageSeen) != 0
}

// StatusFlash is a file system's space in bytes: Free is what an
// unprivileged process may still use.
type StatusFlash struct {
	Free  uint64 `json:"free"`
	Total uint64 `json:"total"`
}

// StatusWiFi is one wireless interface's link as /proc/net/wireless
// reports it.
type StatusWiFi struct {
	Interface string `json:"interface"`
	// Quality is the driver's link quality (its own scale, commonly 0-70).
	Quality int `json:"quality"`
	// SignalDBm is the signal level in dBm; 0 when the driver reports
	// none in dBm.
	SignalDBm int `json:"signalDbm,omitempty"`
}

// StatusHeld is one held action.
type StatusHeld struct {
	// Key is the action's ledger key: what torporctl device confirm and
	// deny take as HOLD.
	Key     string    `json:"key"`
	Purpose string    `json:"purpose"`
	Reason  string    `json:"reason"`
	HeldAt  time.Time `json:"heldAt"`
}

// StatusLost is one possibly lost hand-off: the application may or may
// not have received the object, and the device will not hand it over
// again.
type StatusLost struct {
	ObjectID string `json:"objectId"`
	Issuer   string `json:"issuer"`
	Purpose  string `json:"purpose"`
	// Seq is the relay's sequence number of the record.
	Seq uint64 `json:"seq,omitempty"`
	// RecordedAt is when the device found the hand-off cut off.
	RecordedAt time.Time `json:"recordedAt"`
}

// StatusWake is one wake as the status reports it. Durations are whole
// milliseconds (integers, as draft Section 5.3 prefers).
type StatusWake struct {
	At      time.Time     `json:"at"`
	Reason  string        `json:"reason"`
	AwakeMs int64         `json:"awakeMs,omitempty"`
	Phases  []StatusPhase `json:"phases,omitempty"`
}

// StatusPhase is one measured phase of a wake.
type StatusPhase struct {
	Name    string `json:"name"`
	StartMs int64  `json:"startMs"`
	Ms      int64  `json:"ms"`
	Err     string `json:"error,omitempty"`
}

// ParseStatus decodes a status payload and checks its bounds.
func ParseStatus(payload []byte) (Status, error) {
	var s Status
	if err := json.Unmarshal(payload, &s); err != nil {
		return Status{}, fmt.Errorf("status: %v", err)
	}
	switch {
	case s.HeldCount < len(s.Held):
		return Status{}, fmt.Errorf("status: heldCount %d below the %d held listed", s.HeldCount, len(s.Held))
	case len(s.Held) > MaxStatusHeld:
		return Status{}, fmt.Errorf("status: %d held actions listed, at most %d", len(s.Held), MaxStatusHeld)
	case s.LostCount < len(s.Lost):
		return Status{}, fmt.Errorf("status: lostCount %d below the %d lost listed", s.LostCount, len(s.Lost))
	case len(s.Lost) > MaxStatusLost:
		return Status{}, fmt.Errorf("status: %d lost hand-offs listed, at most %d", len(s.Lost), MaxStatusLost)
	case s.Version == "":
		return Status{}, errors.New("status: no version")
	case s.Health != nil && s.Health.Flash != nil && s.Health.Flash.Free > s.Health.Flash.Total:
		return Status{}, fmt.Errorf("status: %d bytes of flash free of %d", s.Health.Flash.Free, s.Health.Flash.Total)
	case s.Install != nil && s.Install.Result != InstallInstalled && s.Install.Result != InstallRolledBack:
		return Status{}, fmt.Errorf("status: install result %q (want %s or %s)", s.Install.Result, InstallInstalled, InstallRolledBack)
	case s.Install != nil && (s.Install.Version == "" || len(s.Install.Reason) > MaxInstallReason):
		return Status{}, fmt.Errorf("status: an install without a version or with a reason over %d bytes", MaxInstallReason)
	case s.Health != nil && s.Health.WiFi != nil && len(s.Health.WiFi.Interface) > MaxInterface:
		return Status{}, fmt.Errorf("status: a WiFi interface name of %d bytes, at most %d", len(s.Health.WiFi.Interface), MaxInterface)
	case s.Update != nil && s.Update.Outcome == "":
		return Status{}, errors.New("status: an update without an outcome")
	case s.Update != nil && len(s.Update.Target) > MaxStatusUpdateTarget:
		return Status{}, fmt.Errorf("status: an update target of %d bytes, at most %d", len(s.Update.Target), MaxStatusUpdateTarget)
	case s.Update != nil && len(s.Update.Detail) > MaxStatusUpdateDetail:
		return Status{}, fmt.Errorf("status: an update detail of %d bytes, at most %d", len(s.Update.Detail), MaxStatusUpdateDetail)
	}
	return s, s.checkOS()
}

// checkOS checks the operating-system members OSUpdate and OSInstall.
func (s Status) checkOS() error {
	switch u, in := s.OSUpdate, s.OSInstall; {
	case u != nil && (u.Outcome == "" || len(u.Target) > MaxStatusUpdateTarget || len(u.Detail) > MaxStatusUpdateDetail):
		return fmt.Errorf("status: an OS update check without an outcome, or with a target over %d or a detail over %d bytes",
			MaxStatusUpdateTarget, MaxStatusUpdateDetail)
	case in != nil && in.Result != InstallInstalled && in.Result != InstallFailed:
		return fmt.Errorf("status: OS install result %q (want %s or %s)", in.Result, InstallInstalled, InstallFailed)
	case in != nil && (in.Version == "" || len(in.Reason) > MaxInstallReason):
		return fmt.Errorf("status: an OS install without a version or with a reason over %d bytes", MaxInstallReason)
	}
	return nil
}
