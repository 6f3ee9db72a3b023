package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/internal/version"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/conffile"
	"github.com/torpor-dev/torpor/runtime/update/slots"
)

// launch is torpor-agent --slot-launch, the systemd unit's ExecStart: the
// packaged binary decides what this start runs (runtime/update/slots,
// docs/updates.md). It returns here=true when this process goes on as the
// agent (no slot is active, or the slots cannot be read); otherwise it ran
// a slot, and code is the status to exit with.
func launch(ctx context.Context, a *args, argv []string, stderr io.Writer) (code int, here bool) {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	f, err := a.file()
	if err != nil {
		return 0, true // the agent reports it
	}
	s := slots.New(f.SlotsDir(), nil)
	p, err := s.Launch(version.Get().Version)
	if err != nil {
		log.Error("slots: the packaged build runs", "dir", s.Dir, "err", err)
	}
	if p.Replaced != "" {
		log.Warn("package replaced: slots dropped", "version", p.Version, "was", p.Replaced)
	}
	if o := p.RolledBack; o != nil {
		log.Warn("update rolled back", "version", o.Version, "to", o.From, "reason", o.Reason)
	}
	if p.Path == "" {
		return 0, true
	}
	child := childArgs(argv)
	if !p.Trial {
		env := append(os.Environ(), slots.EnvSlot+"="+p.Slot)
		err := syscall.Exec(p.Path, append([]string{p.Path}, child...), env)
		log.Error("slots: the packaged build runs", "slot", p.Slot, "err", err)
		return 0, true
	}
	log.Info("update on trial", "slot", p.Slot, "version", p.Version, "deadline", p.Deadline)
	cmd := exec.Command(p.Path, child...)
	cmd.Stdout, cmd.Stderr = os.Stdout, stderr
	code, err = s.Supervise(ctx, cmd, p)
	if err != nil {
		log.Error("slots: the trial's start", "slot", p.Slot, "err", err)
	}
	return code, false
}

// childArgs is argv without --slot-launch: what a slot's binary runs with.
func childArgs(argv []string) []string {
	var out []string
	for _, s := range argv {
		name, _, _ := strings.Cut(strings.TrimLeft(s, "-"), "=")
		if strings.HasPrefix(s, "-") && name == "slot-launch" {
			continue
		}
		out = append(out, s)
	}
	return out
}

// trial arranges the agent's proof when it runs from a slot on trial: the
// first drain that ends without an error (so the store opened and the
// link came up), then the application's health command when the file names
// one, confirm the slot, and call confirmed (Agent.TrialEnded: in a live
// wake it publishes the status naming the install at once, and installs
// an offered build whose install waited for the trial). A failed health
// check waits for the next drain.
func trial(f *conffile.File, cfg *runtime.Config, log *slog.Logger, confirmed func()) {
	s := slots.New(f.SlotsDir(), cfg.Clock)
	cfg.Status.Install = s.Status
	slot := os.Getenv(slots.EnvSlot)
	if !s.OnTrial(slot) {
		return
	}
	log.Info("on trial", "slot", slot)
	var mu sync.Mutex
	busy, done := false, false
	next := cfg.Hooks.OnPhase
	cfg.Hooks.OnPhase = func(p runtime.Phase) {
		if next != nil {
			next(p)
		}
		if p.Name != runtime.PhaseDrain || p.Err != "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if busy || done {
			return
		}
		busy = true
		go func() {
			ok := prove(f, cfg.Clock, s, slot, log)
			if ok {
				confirmed()
			}
			mu.Lock()
			busy, done = false, ok
			mu.Unlock()
		}()
	}
}

// prove runs the health command, if any, and confirms slot. The command
// gets conffile.HealthTimeout of real time, also under a time scale: it is
// a program running in real time, not part of the device's day, so its
// bound runs on clock.Unscaled (see the clock package's rule).
func prove(f *conffile.File, c clock.Clock, s *slots.Slots, slot string, log *slog.Logger) bool {
	if f.Update != nil && len(f.Update.HealthCommand) > 0 {
		ctx, cancel := clock.WithTimeout(context.Background(), clock.Unscaled(c), conffile.HealthTimeout)
		defer cancel()
		h := f.Update.HealthCommand
		if out, err := exec.CommandContext(ctx, h[0], h[1:]...).CombinedOutput(); err != nil {
			log.Warn("on trial: the health command failed", "command", h[0], "err", err, "output", strings.TrimSpace(string(out)))
			return false
		}
	}
	o, err := s.Confirm(slot)
	if err != nil {
		log.Error("on trial: confirming the slot", "slot", slot, "err", err)
		return errors.Is(err, slots.ErrNotOnTrial)
	}
	log.Info("update installed", "slot", slot, "version", o.Version, "from", o.From)
	return true
}

const slotsHelp = "  torpor-agent slots status|install [flags] [--build-version V FILE]\n"

// slotsCommand runs "torpor-agent slots ...", which works beside a running
// daemon (the slots have their own lock).
func slotsCommand(argv []string, stdout, stderr io.Writer) int {
	if len(argv) == 0 || (argv[0] != "status" && argv[0] != "install") {
		fmt.Fprint(stderr, slotsHelp)
		return 2
	}
	a := &args{set: map[string]bool{}}
	fs := newFlags(a, stderr)
	fs.Init("torpor-agent slots "+argv[0], flag.ContinueOnError)
	bv := fs.String("build-version", "", "The build's version (install).")
	if err := fs.Parse(argv[1:]); err != nil {
		return 2
	}
	fs.Visit(func(f *flag.Flag) { a.set[f.Name] = true })
	a.explicit = a.set["config"]
	f, err := a.file()
	if err != nil {
		fmt.Fprintln(stderr, "torpor-agent slots:", err)
		return 1
	}
	s := slots.New(f.SlotsDir(), nil)
	if argv[0] == "install" {
		if fs.NArg() != 1 {
			fmt.Fprintln(stderr, "torpor-agent slots install: want one FILE")
			return 2
		}
		err = s.Install(fs.Arg(0), *bv, version.Get().Version, f.Trial())
	} else {
		var st slots.State
		if st, err = s.Load(); err == nil {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			err = enc.Encode(st)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "torpor-agent slots:", err)
		return 1
	}
	return 0
}
