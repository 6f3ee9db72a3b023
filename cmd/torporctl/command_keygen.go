package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/torpor-dev/torpor/did"
)

func init() {
	register(&subcommand{
		name:  "keygen",
		args:  "FILE",
		short: "Generate an Ed25519 identity, write it to FILE (mode 0600) and print its did:key.",
		run:   runKeygen,
	})
}

func runKeygen(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	force := fs.Bool("force", false, "Overwrite FILE if it exists. The old key is lost.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errUsage
	}
	k, err := did.Generate(nil)
	if err != nil {
		return err
	}
	if err := saveKey(fs.Arg(0), k, *force); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, k.DID())
	return nil
}
