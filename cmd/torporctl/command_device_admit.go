package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// runDeviceAdmit is "torporctl device admit --relay URL --key KEY DID": it
// asks the relay, as an operator (a DID the relay lists with --operator),
// to admit the device DID, which leaves probation. Unlike the other
// device operations it speaks to the relay over HTTP, not to the device.
func runDeviceAdmit(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("torporctl device admit", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	relayURL := fs.String("relay", envOr("TORPOR_RELAY", "http://127.0.0.1:8080"), "The relay's public origin. Default $TORPOR_RELAY.")
	var scale float64
	timeScaleFlag(fs, &scale)
	keyPath := fs.String("key", os.Getenv("TORPOR_KEY"), "Your operator key file (torporctl keygen); the relay must list its DID (--operator, --operators-file). Default $TORPOR_KEY.")
	fs.Usage = func() {
		fmt.Fprint(e.stderr, "usage: torporctl device admit [flags] DID\n\nAdmits a device on its relay: it leaves probation (small queue bounds and\nKeyPackage pool) and gets the relay's own bounds at its next link.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitError{2}
	}
	agent, err := did.Parse(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("device admit: %v", err)
	}
	if *keyPath == "" {
		return fmt.Errorf("device admit: --key (or $TORPOR_KEY) is required: the operator key the relay lists")
	}
	key, err := loadKey(*keyPath)
	if err != nil {
		return err
	}
	aud, err := bearer.NormalizeAudience(*relayURL)
	if err != nil {
		return fmt.Errorf("device admit: --relay: %v", err)
	}
	clk, err := relayClock(ctx, aud, scale)
	if err != nil {
		return err
	}
	api := &operatorapi.Client{Origin: aud, Key: key, Clock: clk}
	if err := api.Admit(ctx, agent.String()); err != nil {
		return fmt.Errorf("device admit: %v", err)
	}
	fmt.Fprintf(e.stdout, "admitted %s on %s\n", agent, aud)
	return nil
}
