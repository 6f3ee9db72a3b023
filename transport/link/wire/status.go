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
	}
	return s, nil
}
