package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
)

func init() {
	register(&subcommand{
		name:  "did",
		args:  "FILE",
		short: "Print the did:key of the identity in FILE.",
		run:   runDID,
	})
}

func runDID(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errUsage
	}
	k, err := loadKey(fs.Arg(0))
	if errors.Is(err, errNoKeyFile) || errors.Is(err, errNotKeyFile) {
		hint := "did takes the path of a key file written by keygen"
		if strings.HasPrefix(fs.Arg(0), "did:") {
			hint += ", not a DID"
		}
		return fmt.Errorf("%w (%s)", err, hint)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, k.DID())
	return nil
}
