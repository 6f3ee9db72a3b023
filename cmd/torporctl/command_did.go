package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/torpor-dev/torpor/did"
)

func init() {
	register(&command{
		name:  "did",
		args:  "FILE",
		short: "Print the did:key of the identity in FILE.",
		run:   runDID,
	})
}

func runDID(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errUsage
	}
	k, err := did.LoadKey(fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, k.DID())
	return nil
}
