package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/bearer"
)

func init() {
	register(&subcommand{
		name:  "fleet",
		args:  "| fleet open [flags] | fleet tenants [flags]",
		short: "Print the relay's fleet of devices as a table (exit status 3 when any is overdue); \"fleet open\" prints a login link to the relay's fleet console; \"fleet tenants\" a hosted relay's tenants with their totals.",
		run:   runFleet,
	})
}

// loginTTL is how long a login link of fleet open works.
const loginTTL = 2 * time.Minute

// fleetFlags are the flags of fleet and fleet open.
type fleetFlags struct {
	relay, key, state string
	q, version, tag   string
	json, watch       bool
	updates           bool
	every             time.Duration
	scale             float64
}

func (f *fleetFlags) register(fs *flag.FlagSet, open bool) {
	fs.StringVar(&f.relay, "relay", os.Getenv("TORPOR_RELAY"), "The relay's URL, such as https://relay.example. Default $TORPOR_RELAY.")
	fs.StringVar(&f.key, "key", os.Getenv("TORPOR_KEY"), "Your operator key file (torporctl keygen); its DID must be one of the relay's --operator DIDs. Default $TORPOR_KEY.")
	timeScaleFlag(fs, &f.scale)
	if open {
		return
	}
	fs.StringVar(&f.state, "state", "", "Show only devices in this state: "+strings.Join(operatorapi.States, ", ")+".")
	fs.StringVar(&f.q, "q", "", "Show only devices whose name or DID contains this text, in any case.")
	fs.StringVar(&f.version, "version", "", "Show only devices whose signed status names this build version.")
	fs.StringVar(&f.tag, "tag", "", "Show only devices with this tag among their Agent Card's skills' tags.")
	fs.BoolVar(&f.updates, "updates", false, "Print each device's version and the outcomes of its last update check and install (and of OS bundles) instead of the table.")
	fs.BoolVar(&f.json, "json", false, "Print the relay's JSON (GET /fleet/api/devices) instead of the table.")
	fs.BoolVar(&f.watch, "watch", false, "Refresh the table in place every --every until interrupted.")
	fs.DurationVar(&f.every, "every", 5*time.Second, "The refresh interval of --watch.")
}

// runFleet prints the fleet table, or with "open" a login link.
func runFleet(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	open, args := fleetOpen(args)
	tenants := false
	if !open {
		tenants, args = fleetSub(args, "tenants")
	}
	var f fleetFlags
	f.register(fs, open || tenants)
	if tenants {
		fs.BoolVar(&f.json, "json", false, "Print the relay's JSON (GET /fleet/api/tenants) instead of the table.")
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if f.relay == "" || f.key == "" {
		return usageError{"--relay and --key are required"}
	}
	key, origin, clk, err := f.identity(ctx)
	if err != nil {
		return err
	}
	if tenants {
		return fleetTenants(ctx, e.stdout, &operatorapi.Client{Origin: origin, Key: key, Clock: clk}, f.json)
	}
	if open {
		tok, err := bearer.IssuePurpose(key, origin, bearer.PurposeFleetLogin, clk.Now(), loginTTL)
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, origin+"/fleet/login?token="+url.QueryEscape(tok))
		fmt.Fprintln(e.stderr, loginLifetime(f.scale))
		return nil
	}
	if f.state != "" && !contains(operatorapi.States, f.state) {
		return usageError{fmt.Sprintf("--state %q: want one of %s", f.state, strings.Join(operatorapi.States, ", "))}
	}
	c := &fleetClient{api: &operatorapi.Client{Origin: origin, Key: key, Clock: clk},
		query: operatorapi.Query{Q: f.q, State: f.state, Version: f.version, Tag: f.tag}, print: printFleet}
	if f.updates {
		c.print = printUpdates
	}
	if !f.watch {
		return c.once(ctx, e.stdout, f.json)
	}
	return c.watch(ctx, e.stdout, f.json, f.every)
}

// fleetOpen reports whether fleet's subcommand "open" is among args, and
// returns args without it: fleet --relay R open is fleet open --relay R.
func fleetOpen(args []string) (bool, []string) { return fleetSub(args, "open") }

// fleetSub reports whether fleet's subcommand sub is among args, and
// returns args without it.
func fleetSub(args []string, sub string) (bool, []string) {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	new(fleetFlags).register(fs, false)
	return takeSubcommand(fs, args, sub)
}

// loginLifetime says how long a login link lasts, in real time: the relay
// checks it on its clock, which runs scale times faster.
func loginLifetime(scale float64) string {
	if scale == 1 {
		return fmt.Sprintf("Open this link within %v; it works once.", loginTTL)
	}
	real := time.Duration(float64(loginTTL) / scale).Round(time.Millisecond)
	return fmt.Sprintf("Open this link within %v (%v on the relay's clock, which runs %v times faster); it works once.", real, loginTTL, scale)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// identity loads the operator key and the relay's origin and clock.
func (f *fleetFlags) identity(ctx context.Context) (*did.PrivateKey, string, clock.Clock, error) {
	key, err := loadKey(f.key)
	if errors.Is(err, errNoKeyFile) || errors.Is(err, errNotKeyFile) {
		return nil, "", nil, fmt.Errorf("%w (--key takes the path of a key file written by keygen)", err)
	}
	if err != nil {
		return nil, "", nil, err
	}
	if !strings.Contains(f.relay, "://") {
		return nil, "", nil, fmt.Errorf("--relay %q: want an absolute URL such as https://relay.example", f.relay)
	}
	origin, err := bearer.NormalizeAudience(f.relay)
	if err != nil {
		return nil, "", nil, err
	}
	clk, err := relayClock(ctx, origin, f.scale)
	return key, origin, clk, err
}

// fleetClient reads the fleet from a relay's console API.
type fleetClient struct {
	api   *operatorapi.Client
	query operatorapi.Query
	// print prints the fleet for people: printFleet, or printUpdates.
	print func(io.Writer, operatorapi.Fleet)
}

// once prints the fleet once; exit status 3 when any device is overdue.
func (c *fleetClient) once(ctx context.Context, w io.Writer, asJSON bool) error {
	f, raw, err := c.api.FleetQuery(ctx, c.query)
	if err != nil {
		return err
	}
	if asJSON {
		w.Write(raw)
		fmt.Fprintln(w)
	} else {
		c.print(w, f)
	}
	if f.Summary.Overdue > 0 {
		return exitError{3}
	}
	return nil
}

// watch prints the fleet every interval, in place, until ctx ends; it
// returns the status of the last round that completed.
func (c *fleetClient) watch(ctx context.Context, w io.Writer, asJSON bool, every time.Duration) error {
	var last error
	for {
		if !asJSON {
			fmt.Fprint(w, "\x1b[H\x1b[2J") // home, clear the screen
		}
		err := c.once(ctx, w, asJSON)
		if ctx.Err() != nil {
			return last // interrupted during the round
		}
		var ee exitError
		if err != nil && !errors.As(err, &ee) {
			fmt.Fprintln(w, "torporctl fleet:", err)
		}
		last = err
		if clock.Sleep(ctx, clock.Real, every) != nil {
			return last
		}
	}
}
