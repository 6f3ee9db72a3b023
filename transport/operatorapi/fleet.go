package operatorapi

import (
	"time"

	"github.com/torpor-dev/torpor/transport/link/wire"
)

// States of a device, most urgent first (the order of the table).
const (
	StateOverdue = "overdue" // a wake or pulse its schedule promised did not come
	StateHalted  = "halted"  // the owner's halt is in force
	StateAwake   = "awake"   // linked to a relay now
	StateAsleep  = "asleep"  // not linked, as its schedule says
	StateOffline = "offline" // not linked, and its schedule promises nothing to wait for
)

// States lists the states in table order.
var States = []string{StateOverdue, StateHalted, StateAwake, StateAsleep, StateOffline}

// Fleet is the console's view of every device at Now.
type Fleet struct {
	Now     time.Time `json:"now"`
	Grace   Seconds   `json:"overdueGraceSeconds"`
	Summary Summary   `json:"summary"`
	Devices []Device  `json:"devices"`

	// Total counts the devices the query (Query) matched; Devices are
	// page Page of Pages of them, Per a page. Summary counts the whole
	// fleet. A relay older than these fields leaves them zero, and
	// Devices are then every device of the state asked for.
	Total int `json:"total"`
	Page  int `json:"page"`
	Pages int `json:"pages"`
	Per   int `json:"per"`
}

// Summary is the line above the table.
type Summary struct {
	Devices     int `json:"devices"`
	Awake       int `json:"awake"`
	Asleep      int `json:"asleep"`
	Offline     int `json:"offline"`
	Overdue     int `json:"overdue"`
	Halted      int `json:"halted"`
	WithHeld    int `json:"withHeldActions"`
	QueuesAbove int `json:"queuesAbove80"`

	// AwaitingAdmission counts the devices on probation: none of the
	// relay's allow list, bounds or an operator's admission let them out.
	AwaitingAdmission int `json:"awaitingAdmission"`
}

// Seconds is a duration as whole seconds in JSON.
type Seconds int64

// Device is one row of the table, and with Detail its page.
type Device struct {
	Name          string      `json:"name"`
	DuplicateName bool        `json:"duplicateName,omitempty"`
	DID           string      `json:"did"`
	Board         string      `json:"board,omitempty"`
	Version       string      `json:"version,omitempty"`
	Mode          string      `json:"mode"`
	State         string      `json:"state"`
	Linked        bool        `json:"linked"`
	Halted        bool        `json:"halted"`
	NextWindow    *Window     `json:"nextWindow,omitempty"`
	Expected      *time.Time  `json:"expected,omitempty"`    // the wake or pulse its schedule promises next
	LastWake      *Wake       `json:"lastWake,omitempty"`    // the latest wake it started
	LastAwakeMs   int64       `json:"lastAwakeMs,omitempty"` // how long its last completed wake was awake
	Pulse         *Pulse      `json:"pulse,omitempty"`
	Queue         Queue       `json:"queue"`
	KeyPackages   KeyPackages `json:"keyPackages"`
	HeldCount     int         `json:"heldActions"`
	// LostCount counts the hand-offs the device reports possibly lost
	// (link wire.Status LostCount; the device page lists them).
	LostCount   int       `json:"lostHandOffs,omitempty"`
	UpdatedAt   time.Time `json:"updatedAt"` // its last published state
	StatusError string    `json:"statusError,omitempty"`
	Detail      *Detail   `json:"detail,omitempty"`

	// Health is the board's health as the device measured it at the wake
	// of its signed status (link wire.StatusHealth); absent when it
	// reports none, as devices older than it do.
	Health *wire.StatusHealth `json:"health,omitempty"`

	// Update is the outcome of the device's last update check as its
	// signed status says it (link wire.StatusUpdate; docs/updates.md);
	// absent when it checked none, as devices older than it do.
	Update *wire.StatusUpdate `json:"update,omitempty"`

	// Install is the outcome of the device's last install of a new agent
	// build (link wire.StatusInstall: installed, or rolled back and why);
	// absent before its first install, from devices older than the
	// member, and from relays older than this field.
	Install *wire.StatusInstall `json:"install,omitempty"`

	// OSUpdate and OSInstall are Update and Install for operating-system
	// bundles handed to rauc (docs/updates.md, "Operating-system updates:
	// rauc"); absent on devices without rauc and from older relays.
	OSUpdate  *wire.StatusUpdate  `json:"osUpdate,omitempty"`
	OSInstall *wire.StatusInstall `json:"osInstall,omitempty"`

	// AwaitingAdmission: the device is on probation (small bounds and
	// KeyPackage pool) until an operator admits it (torporctl device
	// admit, docs/operations.md).
	AwaitingAdmission bool `json:"awaitingAdmission,omitempty"`

	// Tags are the tags of the skills in the device's Agent Card, each
	// once, sorted: what the fleet's tag filter (Query.Tag) matches.
	Tags []string `json:"tags,omitempty"`
}

// UpdateTrouble reports whether the device's last install of a build
// rolled back or its last update check (of a build or of an OS bundle)
// was refused, or its last OS install failed: what the fleet's tables
// mark at a glance.
func (d Device) UpdateTrouble() bool {
	refused := func(u *wire.StatusUpdate) bool { return u != nil && u.Outcome == wire.UpdateRefused }
	return refused(d.Update) || refused(d.OSUpdate) ||
		(d.Install != nil && d.Install.Result == wire.InstallRolledBack) ||
		(d.OSInstall != nil && d.OSInstall.Result == wire.InstallFailed)
}

// Window is the next wake window.
type Window struct {
	Start  time.Time `json:"start"`
	Length Seconds   `json:"lengthSeconds"`
	In     Seconds   `json:"inSeconds"` // from Now; negative once it opened
}

// Wake is a wake the device reported in its signed status.
type Wake struct {
	At      time.Time          `json:"at"`
	Reason  string             `json:"reason"`
	AwakeMs int64              `json:"awakeMs,omitempty"`
	Phases  []wire.StatusPhase `json:"phases,omitempty"`
}

// Pulse is the device's latest liveness pulse.
type Pulse struct {
	Seq      uint64    `json:"seq"`
	At       time.Time `json:"at"`
	Age      Seconds   `json:"ageSeconds"`
	Verified bool      `json:"verified"`
	Error    string    `json:"error,omitempty"`
}

// Queue is the device's queue at the relay.
type Queue struct {
	Messages    int     `json:"messages"`
	Bytes       int64   `json:"bytes"`
	MaxMessages int     `json:"maxMessages"`
	MaxBytes    int64   `json:"maxBytes"`
	OldestAge   Seconds `json:"oldestAgeSeconds"`
	// Share is the fuller of messages/MaxMessages and bytes/MaxBytes.
	Share float64 `json:"share"`
}

// KeyPackages is the device's KeyPackage pool at the relay.
type KeyPackages struct {
	Left       int  `json:"left"`
	LastResort bool `json:"lastResort"` // the relay holds a last-resort KeyPackage
	// LastResortInUse: the pool is empty, so every session initiator gets
	// the last-resort KeyPackage (RFC 9420, Section 16.8).
	LastResortInUse bool `json:"lastResortInUse"`
}

// Detail is what only the device page shows.
type Detail struct {
	Wakes    []Wake            `json:"wakes"` // this wake and the one before, newest first
	Senders  []Sender          `json:"senders"`
	Held     []wire.StatusHeld `json:"held"`
	Lost     []wire.StatusLost `json:"lost,omitempty"`
	Window   string            `json:"window"`
	Schedule string            `json:"schedule"`
	// History is the relay's record of the device's last wakes (at most
	// store/agents.MaxWakes), oldest first: one each time the device
	// published its state at a wake.
	History []HistoryWake `json:"history"`
}

// HistoryWake is one wake of a device's history at the relay.
type HistoryWake struct {
	// At is when the wake started, as the device's signed status says
	// (else when its link to the relay came up).
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
	// AwakeMs is how long the device stayed awake; the device reports it
	// at its next wake, so it is 0 until then.
	AwakeMs int64 `json:"awakeMs,omitempty"`
	// Drained counts the records the device acknowledged over the link.
	Drained int `json:"drained"`
	// QueueDepth is how many records were queued for it at the wake.
	QueueDepth int `json:"queueDepth"`
	// Missed counts the windows (or pulses) its schedule promised since
	// the wake before and that it did not keep.
	Missed int `json:"missedWindows"`
	// Relay is the relay it linked to.
	Relay string `json:"relay,omitempty"`
}

// Sender is the share of one sender DID in a device's queue.
type Sender struct {
	DID       string  `json:"did"`
	Messages  int     `json:"messages"`
	Bytes     int64   `json:"bytes"`
	OldestAge Seconds `json:"oldestAgeSeconds"`
}

// Filter keeps the devices in state (all when state is empty).
func (f Fleet) Filter(state string) Fleet {
	if state == "" {
		return f
	}
	out := f
	out.Devices = nil
	for _, d := range f.Devices {
		if d.State == state {
			out.Devices = append(out.Devices, d)
		}
	}
	return out
}

// Plus is the sum of s and o, count by count.
func (s Summary) Plus(o Summary) Summary {
	return Summary{Devices: s.Devices + o.Devices, Awake: s.Awake + o.Awake, Asleep: s.Asleep + o.Asleep, Offline: s.Offline + o.Offline,
		Overdue: s.Overdue + o.Overdue, Halted: s.Halted + o.Halted, WithHeld: s.WithHeld + o.WithHeld, QueuesAbove: s.QueuesAbove + o.QueuesAbove,
		AwaitingAdmission: s.AwaitingAdmission + o.AwaitingAdmission}
}
