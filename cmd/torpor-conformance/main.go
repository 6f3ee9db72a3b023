// Command torpor-conformance runs conformance vectors in the reference
// vector format (testdata/vectors/atom) through Torpor's real code: the
// agent's runtime, the relay and its stores. The logic lives in package
// conformance; this command parses flags and prints the report. It is a
// developer tool apart from torporctl, so that the operator's tool does
// not link the relay, its stores or a NATS server.
//
// Usage:
//
//	torpor-conformance [--json] [--store bolt|jetstream] DIR
//
// It prints one line per vector, "PASS|FAIL|SKIP <id> expected=… got=…",
// then "N passed, M failed, K skipped", or with --json one JSON report. It
// exits 0 when no vector failed, 1 when one did or the run could not
// start (DIR holds no vector, an unknown store), and 2 on a usage error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/torpor-dev/torpor/conformance"
	"github.com/torpor-dev/torpor/internal/version"
)

// args are the command-line flags.
type args struct {
	json    bool
	store   string
	version bool
	dir     string
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// parseArgs parses the command line; it returns flag.ErrHelp for -h.
func parseArgs(argv []string, stderr io.Writer) (args, error) {
	var a args
	fs := flag.NewFlagSet("torpor-conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&a.json, "json", false, "Write the results as one JSON document instead of lines.")
	fs.StringVar(&a.store, "store", "bolt", "The relay stores the relay-side vectors run against: bolt, or jetstream (a NATS JetStream server started in this process).")
	fs.BoolVar(&a.version, "version", false, "Print the version and exit.")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: torpor-conformance [flags] DIR\n\nRuns the conformance vectors under DIR (reference vector format) through Torpor's code.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(argv); err != nil {
		return a, err
	}
	if a.version {
		return a, nil
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return a, errors.New("want one argument, the vector directory")
	}
	a.dir = fs.Arg(0)
	return a, nil
}

func run(argv []string, stdout, stderr io.Writer) int {
	a, err := parseArgs(argv, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintln(stderr, "torpor-conformance:", err)
		return 2
	case a.version:
		fmt.Fprintln(stdout, "torpor-conformance", version.Get())
		return 0
	}
	rep, err := conformance.RunWith(a.dir, conformance.Options{Store: a.store})
	if err != nil {
		// The package's own prefix would stutter after the command's.
		fmt.Fprintln(stderr, "torpor-conformance:", strings.TrimPrefix(err.Error(), "conformance: "))
		return 1
	}
	if a.json {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "torpor-conformance:", err)
		return 1
	}
	if rep.Failed > 0 {
		return 1
	}
	return 0
}
