package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/torpor-dev/torpor/mls/vectors"
)

func init() {
	register(&command{
		name:  "mls-vectors",
		args:  "FILE...",
		short: "Run MLS working-group test vector files (RFC 9420) and report each case.",
		run:   runMLSVectors,
	})
}

// runMLSVectors runs each file through mls/vectors, printing one line per
// case and a last line "N passed, M failed, K skipped". It exits 1 if any
// case failed or any file could not be run. The kind of each case is told
// from its fields, so file names do not matter.
func runMLSVectors(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errUsage
	}
	var sum vectors.Summary
	bad := false
	for _, f := range fs.Args() {
		if err := ctx.Err(); err != nil {
			return err
		}
		results, err := vectors.Run(f)
		if err != nil {
			fmt.Fprintf(e.stderr, "torporctl mls-vectors: %v\n", err)
			bad = true
			continue
		}
		for _, r := range results {
			fmt.Fprintln(e.stdout, r)
		}
		sum.Add(results)
	}
	fmt.Fprintln(e.stdout, sum)
	if bad || sum.Failed > 0 {
		return exitError{code: 1}
	}
	return nil
}
