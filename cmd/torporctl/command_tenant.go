package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

func init() {
	register(&subcommand{
		name:  "tenant",
		args:  "operators --key OWNER-KEY [--host-sees-devices] [--ttl DUR] OPERATOR-DID... | usage --verify --relay-did DID FILE...",
		short: "An owner's signed list of its tenant's operators, or the offline check of a hosted relay's signed usage records (docs/tenants.md).",
		run:   runTenant,
	})
}

func runTenant(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	key := fs.String("key", os.Getenv("TORPOR_KEY"), "operators: the owner's key (torporctl keygen); it signs the list. Default $TORPOR_KEY.")
	hostSees := fs.Bool("host-sees-devices", false, "operators: let the relay's host operators see the tenant's devices (never act on them).")
	ttl := fs.Duration("ttl", 0, "operators: how long the list holds (0: until the owner replaces it).")
	verify := fs.Bool("verify", false, "usage: verify each record file's signature by --relay-did (offline).")
	relay := fs.String("relay-did", "", "usage: the relay's DID, known out of band, whose key signs its usage records.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		return errUsage
	}
	switch fs.Arg(0) {
	case "operators":
		return tenantOperators(e, *key, *hostSees, *ttl, fs.Args()[1:])
	case "usage":
		if !*verify {
			return usageError{"tenant usage: only --verify is built (docs/tenants.md, \"Not done yet\")"}
		}
		return tenantVerify(e, *relay, fs.Args()[1:])
	}
	return usageError{"tenant: want operators or usage, not " + fs.Arg(0)}
}

// tenantOperators prints the owner's operator list (transport/tenancy),
// which the relay's tenant endpoint takes.
func tenantOperators(e *env, keyFile string, hostSees bool, ttl time.Duration, ops []string) error {
	if keyFile == "" {
		return fmt.Errorf("no key: pass --key FILE or set TORPOR_KEY (the owner's key)")
	}
	if ttl < 0 {
		return fmt.Errorf("--ttl %v: want a positive lifetime, or 0", ttl)
	}
	list := tenancy.OperatorList{Operators: []string{}, HostSeesDevices: hostSees}
	for _, op := range ops {
		d, err := did.Parse(op)
		if err != nil {
			return fmt.Errorf("operator %q: %w", op, err)
		}
		list.Operators = append(list.Operators, d.String())
	}
	owner, err := loadKey(keyFile)
	if err != nil {
		return err
	}
	b, err := tenancy.SignOperatorList(owner, list, time.Now(), ttl)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", b)
	return err
}

// tenantVerify checks each file's usage record against the relay's DID
// and prints one line per record; any that fails makes the command fail.
func tenantVerify(e *env, relay string, files []string) error {
	if relay == "" || len(files) == 0 {
		return usageError{"tenant usage --verify needs --relay-did DID and at least one record file"}
	}
	r, err := did.Parse(relay)
	if err != nil {
		return fmt.Errorf("--relay-did: %w", err)
	}
	bad := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil {
			var rec tenancy.Record
			if rec, err = tenancy.VerifyRecord(b, r); err == nil {
				fmt.Fprintf(e.stdout, "%s: ok: tenant %s hour %s: %d requests, %d.%03d byte-hours\n", f, rec.Tenant, rec.Hour, rec.Requests, rec.MilliByteHours/1000, rec.MilliByteHours%1000)
				continue
			}
		}
		bad++
		fmt.Fprintf(e.stdout, "%s: FAILED: %v\n", f, err)
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d usage records do not verify", bad, len(files))
	}
	return nil
}
