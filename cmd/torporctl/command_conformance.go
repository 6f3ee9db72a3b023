package main

import (
	"context"
	"errors"
	"flag"
)

// The conformance runner links the agent's runtime, the relay, its stores
// and a NATS server; it is its own binary, cmd/torpor-conformance, so that
// torporctl links none of them. The command stays to say where it went.
func init() {
	register(&subcommand{
		name:  "conformance",
		args:  "DIR",
		short: "Moved: run torpor-conformance DIR (its own binary, built by make build).",
		run:   runConformance,
	})
}

// errConformanceMoved is what "torporctl conformance" answers.
var errConformanceMoved = errors.New("the conformance runner is its own binary now: run torpor-conformance [--json] [--store bolt|jetstream] DIR (make build puts it in bin/; go install github.com/torpor-dev/torpor/cmd/torpor-conformance@latest)")

// runConformance refuses, whatever the arguments, pointing at
// torpor-conformance.
func runConformance(context.Context, *env, *flag.FlagSet, []string) error {
	return errConformanceMoved
}
