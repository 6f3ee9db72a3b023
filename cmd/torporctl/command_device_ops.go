package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/transport/mqtt/command"
)

// deviceOps are the operations of torporctl device: each registers its own
// flags and turns its positional arguments (after DEVICE) into the
// command's arguments.
var deviceOps = map[string]deviceOp{
	"status":             noArgs(command.OpStatus),
	"lost":               noArgs(command.OpStatus), // the status, printed by printLost
	"drain":              noArgs(command.OpDrain),
	"rotate-keys":        noArgs(command.OpRotateKeys),
	"set-mode":           {name: command.OpSetMode, args: "MODE", flags: setModeFlags},
	"wake-now":           {name: command.OpWakeNow, flags: wakeNowFlags},
	"refill-keypackages": {name: command.OpRefillKeyPackages, flags: refillFlags},
	"confirm":            holdOp(command.OpConfirm),
	"deny":               holdOp(command.OpDeny),
	"reconcile":          {name: command.OpReconcile, args: "KEY", flags: reconcileFlags},
	"halt":               noteOp(command.OpHalt),
	"resume":             noteOp(command.OpResume),
	"config-get":         {name: command.OpConfigGet, args: "KEY", flags: configGetFlags},
	"config-set":         {name: command.OpConfigSet, args: "KEY VALUE", flags: configSetFlags},
	"reboot":             {name: command.OpReboot, flags: rebootFlags},
	"time":               {name: command.OpTime, args: "FLOOR", flags: timeFlags},
	"watch":              {name: "watch", flags: watchFlags},
}

func noArgs(op string) deviceOp {
	return deviceOp{name: op, flags: func(*flag.FlagSet) func([]string) (any, error) {
		return func(rest []string) (any, error) {
			if len(rest) > 0 {
				return nil, fmt.Errorf("%s takes no arguments", op)
			}
			return nil, nil
		}
	}}
}

func exactly(n int, rest []string, what string) error {
	if len(rest) != n {
		return fmt.Errorf("want %s", what)
	}
	return nil
}

func setModeFlags(fs *flag.FlagSet) func([]string) (any, error) {
	window := fs.Duration("window", 0, "The hourly window's length (whole seconds, 1s to 1h). Unset keeps the device's.")
	offset := fs.Duration("offset", 0, "The window's shift within the hour. Unset keeps the device's.")
	wakeAt := fs.String("wake-at", "", "sleep mode: the one wake to schedule, RFC 3339 (the relay's Retry-After comes from it).")
	wakeIn := fs.Duration("wake-in", 0, "sleep mode: schedule the wake this long from now.")
	return func(rest []string) (any, error) {
		if err := exactly(1, rest, "MODE (always_on, session, hourly_wake or sleep)"); err != nil {
			return nil, err
		}
		a := &command.SetModeArgs{Mode: rest[0]}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if set["window"] {
			a.WindowSec = seconds(*window)
		}
		if set["offset"] {
			a.OffsetSec = seconds(*offset)
		}
		switch {
		case *wakeAt != "" && *wakeIn != 0:
			return nil, errors.New("--wake-at and --wake-in exclude each other")
		case *wakeAt != "":
			t, err := time.Parse(time.RFC3339, *wakeAt)
			if err != nil {
				return nil, fmt.Errorf("--wake-at: %v", err)
			}
			a.WakeAt = &t
		case *wakeIn != 0:
			t := time.Now().Add(*wakeIn).UTC().Truncate(time.Second)
			a.WakeAt = &t
		}
		return a, nil
	}
}

func seconds(d time.Duration) *int64 {
	s := int64(d / time.Second)
	return &s
}

func wakeNowFlags(fs *flag.FlagSet) func([]string) (any, error) {
	d := fs.Duration("for", 0, "How long to stay awake; 0 for the device's window length.")
	return func(rest []string) (any, error) {
		if err := exactly(0, rest, "no arguments"); err != nil {
			return nil, err
		}
		return &command.WakeNowArgs{ForSec: int64(*d / time.Second)}, nil
	}
}

func refillFlags(fs *flag.FlagSet) func([]string) (any, error) {
	n := fs.Int("count", 0, "How many unused KeyPackages the pool should hold; 0 for the device's pool size.")
	return func(rest []string) (any, error) {
		if err := exactly(0, rest, "no arguments"); err != nil {
			return nil, err
		}
		a := &command.RefillArgs{Count: *n}
		raw, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		if _, err := command.DecodeArgs(command.OpRefillKeyPackages, raw); err != nil {
			return nil, err // the device's own check, before anything is sent
		}
		return a, nil
	}
}

func holdOp(op string) deviceOp {
	return deviceOp{name: op, args: "HOLD", flags: func(*flag.FlagSet) func([]string) (any, error) {
		return func(rest []string) (any, error) {
			if err := exactly(1, rest, "HOLD, the held action's key (device status lists them)"); err != nil {
				return nil, err
			}
			return &command.HoldArgs{Hold: rest[0]}, nil
		}
	}}
}

func reconcileFlags(fs *flag.FlagSet) func([]string) (any, error) {
	happened := fs.Bool("happened", false, "The system of record shows the effect happened: the key completes with --receipt.")
	released := fs.Bool("released", false, "The effect verifiably did not happen: the key is released and may run again.")
	receipt := fs.String("receipt", "", "--happened: the reconciled result, kept as the receipt.")
	effect := fs.String("effect-id", "", "The effect's identifier at its system of record.")
	note := fs.String("note", "", "Who reconciled, against what (kept in the ledger). Required.")
	return func(rest []string) (any, error) {
		if err := exactly(1, rest, "KEY, the indeterminate ledger key (device status lists them)"); err != nil {
			return nil, err
		}
		if *happened == *released {
			return nil, errors.New("say what the system of record shows: --happened or --released")
		}
		if *note == "" {
			return nil, errors.New("--note is required: who reconciled, against what")
		}
		return &command.ReconcileArgs{Key: rest[0], Happened: *happened, Receipt: *receipt, EffectID: *effect, Note: *note}, nil
	}
}

func noteOp(op string) deviceOp {
	return deviceOp{name: op, flags: func(fs *flag.FlagSet) func([]string) (any, error) {
		note := fs.String("note", "", "Why; kept with the device's halt state.")
		return func(rest []string) (any, error) {
			if err := exactly(0, rest, "no arguments (use --note)"); err != nil {
				return nil, err
			}
			return &command.NoteArgs{Note: *note}, nil
		}
	}}
}

func configGetFlags(*flag.FlagSet) func([]string) (any, error) {
	return func(rest []string) (any, error) {
		if err := exactly(1, rest, "KEY"); err != nil {
			return nil, err
		}
		return &command.ConfigArgs{Key: rest[0]}, nil
	}
}

func configSetFlags(*flag.FlagSet) func([]string) (any, error) {
	return func(rest []string) (any, error) {
		if err := exactly(2, rest, "KEY VALUE"); err != nil {
			return nil, err
		}
		return &command.ConfigArgs{Key: rest[0], Value: &rest[1]}, nil
	}
}

func rebootFlags(fs *flag.FlagSet) func([]string) (any, error) {
	delay := fs.Duration("delay", 0, "Reboot this long after answering.")
	return func(rest []string) (any, error) {
		if err := exactly(0, rest, "no arguments"); err != nil {
			return nil, err
		}
		return &command.RebootArgs{DelaySec: int64(*delay / time.Second)}, nil
	}
}

func timeFlags(*flag.FlagSet) func([]string) (any, error) {
	return func(rest []string) (any, error) {
		if err := exactly(1, rest, "FLOOR (an RFC 3339 time)"); err != nil {
			return nil, err
		}
		t, err := time.Parse(time.RFC3339, rest[0])
		if err != nil {
			return nil, fmt.Errorf("FLOOR: %v", err)
		}
		return &command.TimeArgs{Floor: t}, nil
	}
}

func watchFlags(fs *flag.FlagSet) func([]string) (any, error) {
	until := fs.String("until", "", "Stop once the device reports this state (awake, asleep, offline, lost).")
	timeout := fs.Duration("timeout", 0, "Stop after this long; 0 watches until interrupted.")
	return func(rest []string) (any, error) {
		if err := exactly(0, rest, "no arguments"); err != nil {
			return nil, err
		}
		return &watchArgs{until: *until, timeout: *timeout}, nil
	}
}
