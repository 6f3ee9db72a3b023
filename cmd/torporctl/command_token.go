package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/transport/bearer"
)

func init() {
	register(&subcommand{
		name:  "token",
		args:  "--key FILE --aud URL",
		short: "Print a DID Bearer token of the identity in FILE for the server at URL (for curl; docs/a2a.md).",
		run:   runToken,
	})
}

// runToken prints one DID Bearer token (transport/bearer): the key file's
// DID, audience the origin of --aud, issued now and valid for --ttl.
func runToken(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	keyFile := fs.String("key", "", "The key file (written by keygen) whose DID the token asserts.")
	aud := fs.String("aud", "", "The URL of the server the token is for, such as https://relay.example or an agent's URL on it; the token names its origin.")
	ttl := fs.Duration("ttl", bearer.DefaultTTL, "How long the token is valid; torpor-relay refuses tokens valid for longer than 10m.")
	scale := 1.0
	fs.Func("time-scale", "The relay's --time-scale: date the token on the relay's compressed clock (read from its /healthz); --ttl is on that clock too.", func(s string) (err error) {
		scale, err = clock.ParseScale(s)
		return err
	})
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 || *keyFile == "" || *aud == "" {
		return errUsage
	}
	if *ttl <= 0 || *ttl > bearer.DefaultMaxLifetime || *ttl%time.Second != 0 {
		return fmt.Errorf("--ttl %v: want whole seconds, at most %v (the most a Torpor relay accepts)", *ttl, bearer.DefaultMaxLifetime)
	}
	if !strings.Contains(*aud, "://") {
		return fmt.Errorf("--aud %q: want an absolute URL such as https://relay.example", *aud)
	}
	k, err := loadKey(*keyFile)
	if errors.Is(err, errNoKeyFile) || errors.Is(err, errNotKeyFile) {
		return fmt.Errorf("%w (--key takes the path of a key file written by keygen)", err)
	}
	if err != nil {
		return err
	}
	origin, err := bearer.NormalizeAudience(*aud)
	if err != nil {
		return err
	}
	clk, err := relayClock(ctx, origin, scale)
	if err != nil {
		return err
	}
	tok, err := bearer.Issue(k, *aud, clk.Now(), *ttl)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, tok)
	return nil
}
