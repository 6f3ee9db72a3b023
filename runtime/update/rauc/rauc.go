// Package rauc hands operating-system updates to RAUC
// (https://rauc.readthedocs.io/): a verified target of type rauc-bundle
// (runtime/update's Custom.Type) goes to `rauc install BUNDLE`, which
// checks the bundle's signature against the system's keyring, writes the
// slots the bundle holds into the inactive slot group and marks it as the
// one to boot (through the system's bootloader backend). The outcome,
// installed or failed with rauc's reason, is kept on flash for the signed
// status (transport/link/wire's Status.OSInstall), and the version of the
// last bundle installed is the installed version the next check compares
// with.
//
// The rauc command line talks to the rauc service over D-Bus (the
// system bus, or the one DBUS_SYSTEM_BUS_ADDRESS names, Config.Env).
// Rebooting into the new slot group is the system's business, not the
// agent's.
package rauc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/internal/atomicfile"
	"github.com/torpor-dev/torpor/internal/safetext"
)

// The results of an Outcome.
const (
	Installed = "installed"
	Failed    = "failed"
)

// MaxReason caps Outcome.Reason (wire.MaxInstallReason).
const MaxReason = 1024

// maxOutput caps what is kept of rauc's output.
const maxOutput = 64 << 10

// Config configures an Installer.
type Config struct {
	// Command is the rauc executable; "" means "rauc" on PATH.
	Command string
	// Args go before "install" (for example "--conf=FILE").
	Args []string
	// Env is added to the command's environment, for example
	// DBUS_SYSTEM_BUS_ADDRESS when the rauc service is on another bus.
	Env []string
	// State is the file the outcome is kept in. Required.
	State string
	// Clock stamps the outcomes; nil means clock.Real.
	Clock clock.Clock
}

// Outcome is what became of one bundle.
type Outcome struct {
	Result  string    `json:"result"`
	Target  string    `json:"target"`
	Version uint64    `json:"version"`
	SHA256  string    `json:"sha256,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	At      time.Time `json:"at"`
}

// State is what the State file keeps: the version of the last bundle
// installed and the last outcome.
type State struct {
	Installed uint64   `json:"installed"`
	Last      *Outcome `json:"last,omitempty"`
}

// Installer runs `rauc install`.
type Installer struct {
	cfg   Config
	clock clock.Clock
}

// New returns an Installer for cfg.
func New(cfg Config) (*Installer, error) {
	if cfg.State == "" {
		return nil, errors.New("rauc: Config needs a State file")
	}
	if cfg.Command == "" {
		cfg.Command = "rauc"
	}
	return &Installer{cfg: cfg, clock: clock.Or(cfg.Clock)}, nil
}

// State reads the kept state (the zero State before the first install).
// A state file that does not decode is an error, never a zero State: the
// installed version must not go back.
func (in *Installer) State() (State, error) {
	var s State
	b, err := os.ReadFile(in.cfg.State)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("rauc: reading the state: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("rauc: the state %s: %w", in.cfg.State, err)
	}
	return s, nil
}

// Install runs `rauc install bundle` for target at version (sha256 is the
// target's hash, which names the bundle in the outcome) and keeps the
// outcome: installed when rauc exits 0, else failed with rauc's reason
// (its "LastError:" line, else its last line of output). The error is
// only for the state that could not be read or written: what rauc did is
// in the Outcome.
func (in *Installer) Install(ctx context.Context, bundle, target string, version uint64, sha256 string) (Outcome, error) {
	s, err := in.State()
	if err != nil {
		return Outcome{}, err
	}
	args := append(append([]string(nil), in.cfg.Args...), "install", bundle)
	cmd := exec.CommandContext(ctx, in.cfg.Command, args...)
	cmd.Env = append(os.Environ(), in.cfg.Env...)
	out := &capped{n: maxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	runErr := cmd.Run()
	o := Outcome{Result: Installed, Target: target, Version: version, SHA256: sha256, At: in.clock.Now().UTC()}
	if runErr != nil {
		o.Result, o.Reason = Failed, safetext.Clip(reason(out.b.String(), runErr), MaxReason)
	} else if version > s.Installed {
		s.Installed = version
	}
	s.Last = &o
	b, _ := json.Marshal(s)
	if err := atomicfile.WriteFile(in.cfg.State, b, 0o600); err != nil {
		return o, fmt.Errorf("rauc: keeping the outcome: %w", err)
	}
	return o, nil
}

// reason is why rauc failed: its "LastError:" line (the service's
// error), else its last line of output, with how it exited.
func reason(out string, err error) string {
	var last string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		l = strings.TrimSpace(l)
		if v, ok := strings.CutPrefix(l, "LastError:"); ok {
			return strings.TrimSpace(v) + " (" + err.Error() + ")"
		}
		if l != "" {
			last = l
		}
	}
	if last == "" {
		return "rauc install: " + err.Error()
	}
	return last + " (" + err.Error() + ")"
}

// capped keeps the first n bytes written to it.
type capped struct {
	b bytes.Buffer
	n int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.n - c.b.Len(); room > 0 {
		c.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
