package slots

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// StateFile is the name of the state file in the slots directory.
const StateFile = "slots.json"

// Binary is the name of a slot's binary in its directory.
const Binary = "torpor-agent"

// EnvSlot is the environment variable the launcher sets for a slot's
// binary: the slot's name, so that the binary knows what it confirms.
const EnvSlot = "TORPOR_SLOT"

// Base names the packaged binary (the launcher itself) as the active
// build: no slot.
const Base = ""

// Defaults of a trial.
const (
	DefaultStarts   = 3
	DefaultDeadline = 15 * time.Minute
)

// Results of an Outcome.
const (
	Installed  = wire.InstallInstalled
	RolledBack = wire.InstallRolledBack
)

// State is the content of slots.json.
type State struct {
	// Active is the slot that runs outside a trial: "a", "b" or Base.
	Active        string `json:"active"`
	ActiveVersion string `json:"activeVersion,omitempty"`
	// ActiveSHA256 is the hex SHA-256 of the active slot's binary.
	ActiveSHA256 string   `json:"activeSHA256,omitempty"`
	Trial        *Trial   `json:"trial,omitempty"`
	Outcome      *Outcome `json:"outcome,omitempty"`
	// Base is the packaged build's version when the slots were first
	// installed; a launcher of another version (apt replaced the
	// package) runs itself and drops the slots (Launch).
	Base string `json:"base,omitempty"`
}

// Trial is a slot on trial.
type Trial struct {
	Slot    string `json:"slot"`
	Version string `json:"version"`
	From    string `json:"from,omitempty"` // the version active when it was installed
	SHA256  string `json:"sha256"`
	// Starts counts the starts of the slot so far, each counted before it
	// ran; MaxStarts is how many it gets.
	Starts    int `json:"starts"`
	MaxStarts int `json:"maxStarts"`
	// Deadline is how long each start has to confirm.
	Deadline time.Duration `json:"deadline"`
	// Failures are why each start that ended unconfirmed ended, in turn.
	Failures []string `json:"failures,omitempty"`
}

// Outcome is the last install's result, kept until the agent reported it.
type Outcome struct {
	Result  string    `json:"result"` // Installed or RolledBack
	Version string    `json:"version"`
	From    string    `json:"from,omitempty"` // the version before
	Reason  string    `json:"reason,omitempty"`
	At      time.Time `json:"at"`
}

// Slots is the slots directory of one device.
type Slots struct {
	Dir   string
	Clock clock.Clock // nil: the real clock
	fs    fsys
}

// New returns the slots under dir (the agent's state directory's
// "slots"); nothing is made until the first Install.
func New(dir string, c clock.Clock) *Slots {
	return &Slots{Dir: dir, Clock: clock.Or(c), fs: osFS{}}
}

// Path returns the binary of slot, or "" for Base.
func (s *Slots) Path(slot string) string {
	if slot == Base {
		return ""
	}
	return filepath.Join(s.Dir, slot, Binary)
}

// Load reads the state; a missing file is the zero State (the packaged
// binary runs), a damaged one an error.
func (s *Slots) Load() (State, error) {
	var st State
	b, err := s.fs.ReadFile(filepath.Join(s.Dir, StateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("slots: %s: %w", StateFile, err)
	}
	if err := st.check(); err != nil {
		return st, fmt.Errorf("slots: %s: %w", StateFile, err)
	}
	return st, nil
}

func (st *State) check() error {
	if !validSlot(st.Active) {
		return fmt.Errorf("active slot %q (want a, b or none)", st.Active)
	}
	if t := st.Trial; t != nil {
		if t.Slot == Base || !validSlot(t.Slot) || t.Slot == st.Active {
			return fmt.Errorf("trial of slot %q with %q active", t.Slot, st.Active)
		}
		if t.MaxStarts < 1 || t.Deadline <= 0 {
			return fmt.Errorf("trial of %d starts of %v", t.MaxStarts, t.Deadline)
		}
	}
	return nil
}

func validSlot(s string) bool { return s == Base || s == "a" || s == "b" }

func (s *Slots) save(st State) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return s.fs.WriteAtomic(filepath.Join(s.Dir, StateFile), append(b, '\n'), 0o600)
}

// other returns the slot an install writes when active runs.
func other(active string) string {
	if active == "a" {
		return "b"
	}
	return "a"
}
