package main

import (
	"context"
	"errors"
	"flag"
	"strings"

	"github.com/torpor-dev/torpor/conformance"
)

func init() {
	register(&subcommand{
		name:  "conformance",
		args:  "DIR",
		short: "Run the conformance vectors under DIR (reference vector format) through Torpor's code.",
		run:   runConformance,
	})
}

// runConformance prints one line per vector, "PASS|FAIL|SKIP <id>
// expected=… got=…", then "N passed, M failed, K skipped", or with --json
// one JSON report. It exits 1 when any vector failed, and with an error
// when DIR holds no vector.
func runConformance(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	asJSON := fs.Bool("json", false, "Write the results as one JSON document instead of lines.")
	storeKind := fs.String("store", "bolt", "The relay stores the relay-side vectors run against: bolt, or jetstream (a NATS JetStream server started in this process).")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errUsage
	}
	rep, err := conformance.RunWith(fs.Arg(0), conformance.Options{Store: *storeKind})
	if err != nil {
		// Under "torporctl conformance:" the package's own prefix
		// would stutter; trimming it only changes how the error reads.
		return errors.New(strings.TrimPrefix(err.Error(), "conformance: "))
	}
	if *asJSON {
		err = rep.WriteJSON(e.stdout)
	} else {
		err = rep.WriteText(e.stdout)
	}
	if err != nil {
		return err
	}
	if rep.Failed > 0 {
		return exitError{code: 1}
	}
	return nil
}
