package conffile

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/runtime/update/rauc"
	"github.com/torpor-dev/torpor/runtime/update/slots"
)

// Update is the file's "update": the update check at each linked wake
// (runtime/update; on with "version"), where the agent's A/B slots are
// and how a newly installed build proves itself (runtime/update/slots,
// docs/updates.md).
type Update struct {
	// Slots is the slots directory; empty means "slots" in the data
	// directory, or DefaultSlots without one.
	Slots string `json:"slots,omitempty"`
	// TrialStarts is how many starts a new build gets to prove itself
	// (default slots.DefaultStarts, at most MaxTrialStarts).
	TrialStarts int `json:"trialStarts,omitempty"`
	// TrialDeadline is how long each of those starts has (default
	// slots.DefaultDeadline).
	TrialDeadline Duration `json:"trialDeadline,omitempty"`
	// HealthCommand, when set, is the application's health check: the
	// program (an absolute path) and its arguments, run once the new
	// build opened its store, linked and drained; status 0 within
	// HealthTimeout is healthy.
	HealthCommand []string `json:"healthCommand,omitempty"`

	// Version turns on the update check at each linked wake
	// (runtime/update): the running build's version, the one its target
	// was signed with (torporctl update sign-target --version).
	Version uint64 `json:"version,omitempty"`
	// Dir keeps the trusted metadata and the downloads; its meta/root.json
	// is the owner's root the device was provisioned with. Empty means
	// the "update" directory of dataDir.
	Dir string `json:"dir,omitempty"`
	// BudgetBytes bounds the bytes one wake downloads; 0 means 1 MiB.
	BudgetBytes int64 `json:"budgetBytes,omitempty"`
	// Rauc, when set, turns on operating-system updates: targets of type
	// rauc-bundle are handed to `rauc install` (runtime/update/rauc).
	Rauc *Rauc `json:"rauc,omitempty"`
}

// Rauc is "update"'s "rauc": how the agent runs the rauc command line.
type Rauc struct {
	// Command is the rauc executable (an absolute path); empty means
	// /usr/bin/rauc.
	Command string `json:"command,omitempty"`
	// Args go before "install", for example ["--conf=/etc/rauc/system.conf"].
	Args []string `json:"args,omitempty"`
	// Env is added to rauc's environment ("NAME=value"), for example
	// DBUS_SYSTEM_BUS_ADDRESS when the rauc service is on another bus.
	Env []string `json:"env,omitempty"`
}

// DefaultSlots is the slots directory when neither "update" nor
// "dataDir" names one: in the systemd unit's StateDirectory, where the
// board profiles keep the data.
const DefaultSlots = "/var/lib/torpor/slots"

// MaxTrialStarts bounds "trialStarts": the unit's start limit
// (StartLimitBurst=5 in 10 minutes) must leave room for the rollback.
const MaxTrialStarts = 4

// HealthTimeout bounds the health command, in real time also under a time
// scale.
const HealthTimeout = time.Minute

// SlotsDir returns the slots directory the file names.
func (f *File) SlotsDir() string {
	switch {
	case f.Update != nil && f.Update.Slots != "":
		return f.Update.Slots
	case f.DataDir != "":
		return filepath.Join(f.DataDir, "slots")
	}
	return DefaultSlots
}

// Trial returns the trial bounds of a new build.
func (f *File) Trial() slots.TrialOptions {
	if f.Update == nil {
		return slots.TrialOptions{}
	}
	return slots.TrialOptions{Starts: f.Update.TrialStarts, Deadline: time.Duration(f.Update.TrialDeadline)}
}

// checkUpdate checks the file's "update", every problem at once.
func (f *File) checkUpdate() error {
	u := f.Update
	if u == nil {
		return nil
	}
	var bad []string
	if u.Slots != "" && !filepath.IsAbs(u.Slots) {
		bad = append(bad, "slots "+strconv.Quote(u.Slots)+" is not an absolute path")
	}
	if u.TrialStarts < 0 || u.TrialStarts > MaxTrialStarts {
		bad = append(bad, "trialStarts "+strconv.Itoa(u.TrialStarts)+" (want 1 to 4, or 0 for 3)")
	}
	if u.TrialDeadline < 0 {
		bad = append(bad, "trialDeadline "+time.Duration(u.TrialDeadline).String()+" is negative")
	}
	if len(u.HealthCommand) > 0 && !filepath.IsAbs(u.HealthCommand[0]) {
		bad = append(bad, "healthCommand "+strconv.Quote(u.HealthCommand[0])+" is not an absolute path")
	}
	if r := u.Rauc; r != nil && r.Command != "" && !filepath.IsAbs(r.Command) {
		bad = append(bad, "rauc.command "+strconv.Quote(r.Command)+" is not an absolute path")
	}
	if r := u.Rauc; r != nil {
		for _, e := range r.Env {
			if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
				bad = append(bad, "rauc.env "+strconv.Quote(e)+" is not NAME=value")
			}
		}
	}
	if bad == nil {
		return nil
	}
	return errors.New(`"update": ` + strings.Join(bad, "; "))
}

// buildUpdate sets Config.Relay.Updates from "update": the directory
// must hold the owner's root (meta/root.json), and the device is this
// build's board profile and architecture.
func (f *File) buildUpdate(c *runtime.Config) error {
	u := f.Update
	if u == nil || (u.Version == 0 && u.Dir == "" && u.BudgetBytes == 0) {
		return nil // no update check: "update" may name only the slots
	}
	if u.Version == 0 {
		return errors.New(`"update": "version" (the running build's, as its target was signed) is required`)
	}
	dir := u.Dir
	if dir == "" {
		if c.Store.DataDir == "" {
			return nil // reported as no data directory
		}
		dir = filepath.Join(c.Store.DataDir, "update")
	}
	if _, err := os.Stat(filepath.Join(dir, "meta", "root.json")); err != nil {
		return fmt.Errorf(`"update": the owner's root: %w (provision it from torporctl update keys init)`, err)
	}
	c.Relay.Updates = &runtime.Updates{Dir: dir, Installed: u.Version, Budget: u.BudgetBytes,
		Device: update.Device{Board: c.Board, GOARCH: goruntime.GOARCH, GOARM: goarm()}, Running: running()}
	if r := u.Rauc; r != nil {
		in, err := rauc.New(rauc.Config{Command: cmp.Or(r.Command, DefaultRauc), Args: r.Args, Env: r.Env,
			State: filepath.Join(dir, "rauc.json")})
		if err != nil {
			return err
		}
		c.Relay.Updates.Rauc = in
	}
	return nil
}

// DefaultRauc is the rauc command line when "rauc" names none: Debian's.
const DefaultRauc = "/usr/bin/rauc"

// running is this binary's path, which a target's delta patches; empty
// when it cannot be told (targets are then fetched whole).
func running() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}

// goarm is the GOARM this binary was built with ("" off 32-bit ARM).
func goarm() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || goruntime.GOARCH != "arm" {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == "GOARM" {
			v, _, _ := strings.Cut(s.Value, ",") // "6,softfloat"
			return v
		}
	}
	return ""
}
