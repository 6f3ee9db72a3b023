package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"github.com/torpor-dev/torpor/transport/tenancy"
)

func init() {
	register(&subcommand{
		name: "tenant",
		args: "list --relay URL --key FILE | set --relay URL --key FILE --tenant DID --quotas JSON | operators --key OWNER-KEY [--upload --relay URL] [--host-sees-devices] [--ttl DUR] OPERATOR-DID... | " +
			"usage --relay URL --key FILE --tenant DID [--hour T] | usage --verify --relay-did DID FILE...",
		short: "An owner's signed list of its tenant's operators on a hosted relay, a tenant's signed usage records, and their offline check (docs/tenants.md).",
		run:   runTenant,
	})
}

// tenantFlags are the flags of tenant.
type tenantFlags struct {
	fleetFlags
	hostSees, upload, verify bool
	ttl                      time.Duration
	relayDID, tenant, hour   string
	quotas                   string
}

func runTenant(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	var f tenantFlags
	f.fleetFlags.register(fs, true)
	fs.BoolVar(&f.hostSees, "host-sees-devices", false, "operators: let the relay's host operators see the tenant's devices (never act on them).")
	fs.BoolVar(&f.upload, "upload", false, "operators: upload the list to --relay instead of printing it.")
	fs.DurationVar(&f.ttl, "ttl", 0, "operators: how long the list holds (0: until the owner replaces it).")
	fs.BoolVar(&f.verify, "verify", false, "usage: verify each record file's signature by --relay-did, offline.")
	fs.StringVar(&f.relayDID, "relay-did", "", "usage --verify: the relay's DID (its --usage-key), known out of band.")
	fs.StringVar(&f.tenant, "tenant", "", "usage, set: the tenant's owner DID.")
	fs.StringVar(&f.quotas, "quotas", "", `set: the tenant's quotas as in the relay's --tenants file, e.g. '{"devices":100,"queuedBytes":1048576}' (a quota left out is no limit).`)
	fs.StringVar(&f.hour, "hour", "", "usage: a time in the hour wanted (RFC 3339); default: the current hour.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		return errUsage
	}
	switch fs.Arg(0) {
	case "operators":
		return tenantOperators(ctx, e, f, fs.Args()[1:])
	case "list":
		return tenantList(ctx, e, f)
	case "set":
		return tenantSet(ctx, e, f)
	case "usage":
		if f.verify {
			return tenantVerify(e, f.relayDID, fs.Args()[1:])
		}
		return tenantUsage(ctx, e, f)
	}
	return usageError{"tenant: want list, set, operators or usage, not " + fs.Arg(0)}
}

// tenantUsage fetches a tenant's signed usage record and prints it as the
// relay signed it.
func tenantUsage(ctx context.Context, e *env, f tenantFlags) error {
	if f.relay == "" || f.key == "" || f.tenant == "" {
		return usageError{"tenant usage needs --relay, --key and --tenant (or --verify)"}
	}
	key, origin, clk, err := f.identity(ctx)
	if err != nil {
		return err
	}
	hour := clk.Now() // the relay's clock, when it runs scaled
	if f.hour != "" {
		if hour, err = time.Parse(time.RFC3339, f.hour); err != nil {
			return fmt.Errorf("--hour: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	b, err := (&operatorapi.Client{Origin: origin, Key: key, Clock: clk}).Usage(ctx, f.tenant, hour)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", bytes.TrimSpace(b))
	return err
}

// tenantOperators prints the owner's operator list (transport/tenancy),
// or with --upload gives it to the relay.
func tenantOperators(ctx context.Context, e *env, f tenantFlags, ops []string) error {
	keyFile, hostSees, ttl := f.key, f.hostSees, f.ttl
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
	if !f.upload {
		_, err = fmt.Fprintf(e.stdout, "%s\n", b)
		return err
	}
	if !strings.Contains(f.relay, "://") {
		return usageError{"--upload needs --relay URL"}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := operatorapi.PutOperatorList(ctx, nil, strings.TrimRight(f.relay, "/"), b); err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "operators of tenant %s: %d\n", owner.DID(), len(list.Operators))
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
				upd := "" // absent from a record of a relay from before update bytes were counted
				if rec.PeakUpdateBytes != nil {
					upd = fmt.Sprintf(", %d peak update bytes", *rec.PeakUpdateBytes)
				}
				fmt.Fprintf(e.stdout, "%s: ok: tenant %s hour %s: %d requests, %d.%03d byte-hours%s\n", f, rec.Tenant, rec.Hour, rec.Requests, rec.MilliByteHours/1000, rec.MilliByteHours%1000, upd)
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

// tenantList prints the relay's tenants with their quotas and totals, as
// the relay's own operators see them.
func tenantList(ctx context.Context, e *env, f tenantFlags) error {
	if f.relay == "" || f.key == "" {
		return usageError{"tenant list needs --relay and --key (one of the relay's operators)"}
	}
	key, origin, clk, err := f.identity(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	b, err := (&operatorapi.Client{Origin: origin, Key: key, Clock: clk}).Tenants(ctx)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", bytes.TrimSpace(b))
	return err
}

// tenantSet makes --tenant a tenant of the relay with --quotas, or sets
// its quotas, as one of the relay's own operators, and prints the
// tenant's line of the host's list.
func tenantSet(ctx context.Context, e *env, f tenantFlags) error {
	if f.relay == "" || f.key == "" || f.tenant == "" || f.quotas == "" {
		return usageError{"tenant set needs --relay, --key (one of the relay's operators), --tenant and --quotas"}
	}
	owner, err := did.Parse(f.tenant)
	if err != nil {
		return fmt.Errorf("--tenant: %w", err)
	}
	var q tenancy.Quotas
	dec := json.NewDecoder(strings.NewReader(f.quotas))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		return fmt.Errorf("--quotas: %v", err)
	}
	if err := q.Check(); err != nil {
		return fmt.Errorf("--quotas: %v", err)
	}
	key, origin, clk, err := f.identity(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	b, err := (&operatorapi.Client{Origin: origin, Key: key, Clock: clk}).PutTenant(ctx, owner.String(), q)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", bytes.TrimSpace(b))
	return err
}
