package envelope

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
)

// State is the connection state a status reports.
type State string

const (
	// StateAwake: the device is connected and takes commands now.
	StateAwake State = "awake"
	// StateAsleep: the device went to sleep cleanly; NextWake says when it
	// expects to be back (absent in sleep mode without a scheduled wake).
	// Commands sent meanwhile wait in its broker session.
	StateAsleep State = "asleep"
	// StateOffline: the device shut down cleanly with no wake planned
	// (agents before StateStopped; kept for reading their statuses).
	StateOffline State = "offline"
	// StateStopped: the agent stopped in an orderly way (Close: SIGTERM,
	// also while it slept); it makes no wake until it is started again.
	StateStopped State = "stopped"
	// StateLost: the broker published the device's will: its connection
	// ended without a DISCONNECT (power cut, crash, network loss).
	StateLost State = "lost"
)

// Window is an hourly wake window as a status reports it.
type Window struct {
	Minute    int   `json:"minute"`
	LengthSec int64 `json:"lengthSec"`
	OffsetSec int64 `json:"offsetSec,omitempty"`
}

// Status is the payload of a status object, the retained message on the
// status topic. The mqtt.Client fills Device, Name, State and Since; the rest
// comes from the Handler when it implements mqtt.StatusReporter.
type Status struct {
	Device string `json:"device"`
	Name   string `json:"name"`
	State  State  `json:"state"`
	// Since is when the device entered State (for StateLost: when the
	// connection that ended began).
	Since    time.Time  `json:"since"`
	Mode     string     `json:"mode,omitempty"`
	Window   *Window    `json:"window,omitempty"`
	NextWake *time.Time `json:"nextWake,omitempty"`
	// Halted is true while the owner's halt is in force.
	Halted bool `json:"halted,omitempty"`
	// Held and Indeterminate count held actions and indeterminate ledger
	// keys, both waiting for an operator.
	Held          int `json:"held,omitempty"`
	Indeterminate int `json:"indeterminate,omitempty"`
	// Lost counts the hand-offs to the application that a crash may have
	// cut off with at-most-once notify, as the device's ledger keeps them
	// (store/ledger Lost); LostHandOffs lists the newest MaxStatusLost of
	// them, newest first (torporctl device lost). Both were added after
	// the members above: operators that predate them ignore them, as
	// encoding/json ignores members a type does not have.
	Lost         int           `json:"lost,omitempty"`
	LostHandOffs []LostHandOff `json:"lostHandOffs,omitempty"`
	// Version is the agent's version (internal/version Short).
	Version string `json:"version,omitempty"`
	// Extra carries anything else the device reports.
	Extra map[string]any `json:"extra,omitempty"`
}

// MaxStatusLost caps Status.LostHandOffs.
const MaxStatusLost = 16

// LostHandOff is one hand-off a crash may have cut off: the application
// may or may not have received the object, and the device does not hand
// it over again.
type LostHandOff struct {
	ObjectID string `json:"objectId"`
	Issuer   string `json:"issuer"`
	Purpose  string `json:"purpose"`
	// Seq is the relay's sequence number of the record.
	Seq uint64 `json:"seq,omitempty"`
	// RecordedAt is when the device found the hand-off cut off.
	RecordedAt time.Time `json:"recordedAt"`
}

// Event is the payload of an event object.
type Event struct {
	Device string `json:"device"`
	// Kind names the event: "command-rejected" (a payload on the command
	// topic that could not be answered), "rejections-suppressed", or a
	// kind the runtime defines ("held-action", ...).
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
	Data   any    `json:"data,omitempty"`
}

// VerifyStatus decodes and checks a status as an operator received it at
// now, like VerifyObject.
func VerifyStatus(contentType string, payload []byte, device did.DID, now time.Time) (Status, *governed.Object, error) {
	var s Status
	o, err := verifyDeviceObject(contentType, payload, device, SchemaStatus, PurposeStatus, &s, now)
	if err != nil {
		return Status{}, nil, err
	}
	if s.Device != o.Issuer.String() {
		return Status{}, nil, fmt.Errorf("%w: status names device %s but is signed by %s", ErrNotFromDevice, truncate(s.Device), o.Issuer)
	}
	return s, o, nil
}

// VerifyEvent decodes and checks an event as an operator received it at
// now, like VerifyObject. Data is left as raw JSON.
func VerifyEvent(contentType string, payload []byte, device did.DID, now time.Time) (Event, json.RawMessage, *governed.Object, error) {
	var e struct {
		Event
		Data json.RawMessage `json:"data,omitempty"`
	}
	o, err := verifyDeviceObject(contentType, payload, device, SchemaEvent, PurposeEvent, &e, now)
	if err != nil {
		return Event{}, nil, nil, err
	}
	return e.Event, e.Data, o, nil
}

// Lifetimes of statuses. A retained status outlives the connection that
// published it, so what it says must stop being believed once it may no
// longer be true.
const (
	// StatusAwakeTTL is the lifetime of status awake; the Client
	// publishes it again every StatusAwakeTTL/2 while connected.
	StatusAwakeTTL = time.Hour
	// StatusGrace is added to the announced next wake for status asleep:
	// a device late by more than that is not where its status says.
	StatusGrace = 15 * time.Minute
	// MaxStatusTTL is the lifetime of the statuses that stay true until
	// the device is heard from again (stopped, offline, lost, asleep with
	// no wake announced): the longest a broker keeps the session
	// (mqtt.DefaultSessionExpiry, the same).
	MaxStatusTTL = 30 * 24 * time.Hour
)

// statusTTL is the lifetime of a status s issued at now.
func statusTTL(s Status, now time.Time) time.Duration {
	switch {
	case s.State == StateAwake:
		return StatusAwakeTTL
	case s.State == StateAsleep && s.NextWake != nil:
		d := max(s.NextWake.Sub(now), 0) + StatusGrace
		return (d + time.Second - 1).Truncate(time.Second) // whole seconds (governed)
	}
	return MaxStatusTTL
}

// SignStatus signs s as a status object issued at now, with the lifetime
// its state calls for (statusTTL).
func SignStatus(key *did.PrivateKey, now time.Time, s Status) (*governed.Object, error) {
	return signDeviceObject(key, now, SchemaStatus, PurposeStatus, s, statusTTL(s, now))
}

// SignEvent signs e as an event object issued at now.
func SignEvent(key *did.PrivateKey, now time.Time, e Event) (*governed.Object, error) {
	return signDeviceObject(key, now, SchemaEvent, PurposeEvent, e, DefaultReplyTTL)
}
