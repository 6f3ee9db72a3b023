package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/internal/safetext"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

func init() {
	register(&subcommand{
		name:  "enrol",
		args:  "[flags] DEVICE-DID",
		short: "Print an owner's enrolment of a device: a relay that trusts the owner (--owner) admits it at once (docs/security.md).",
		run:   runEnrol,
	})
}

// enrolSchema is the semantic schema of an enrolment.
const enrolSchema = "urn:torpor:enrolment"

func runEnrol(_ context.Context, e *env, fs *flag.FlagSet, args []string) error {
	key := fs.String("key", os.Getenv("TORPOR_KEY"), "The owner's key (torporctl keygen): it signs the enrolment. Default $TORPOR_KEY.")
	name := fs.String("name", "", "The name the owner gives the device (optional).")
	ttl := fs.Duration("ttl", 365*24*time.Hour, "How long the enrolment admits the device: a relay refuses it after that (the device then waits for an operator, or a new enrolment).")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errUsage
	}
	dev, err := did.Parse(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("device: %w", err)
	}
	if *name != "" {
		if err := safetext.Check("--name", *name); err != nil {
			return err
		}
	}
	if *key == "" {
		return fmt.Errorf("no key: pass --key FILE or set TORPOR_KEY (the owner's key)")
	}
	owner, err := loadKey(*key)
	if err != nil {
		return err
	}
	if *ttl <= 0 {
		return fmt.Errorf("--ttl %v: want a positive lifetime", *ttl)
	}
	o, err := governed.Sign(owner, governed.Template{IssuedAt: time.Now(), Semantic: governed.Semantic{Schema: enrolSchema},
		Payload: wire.EnrolmentPayload{Device: dev.String(), Name: *name}, Purpose: wire.PurposeEnrolment, TTL: *ttl})
	if err != nil {
		return err
	}
	b, err := o.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", b)
	return err
}
