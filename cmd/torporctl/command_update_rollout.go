package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// rolloutArgs are the flags of update rollout.
type rolloutArgs struct {
	queueArgs                                                        // --relay, --key, --json, --time-scale
	target, version, sha256, percents, failureTypes, devices, reason string
	tenant                                                           string
	minExecuted                                                      int
	threshold                                                        float64
	waveTime                                                         time.Duration
}

// runUpdateRollout is `torporctl update rollout start|status|pause|resume|abort`:
// an operator's rollouts on the relay (docs/updates.md, "Rollouts").
func runUpdateRollout(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	var a rolloutArgs
	fs.StringVar(&a.relay, "relay", envOr("TORPOR_RELAY", "http://127.0.0.1:8080"), "The relay, its public origin. Default $TORPOR_RELAY.")
	fs.StringVar(&a.key, "key", os.Getenv("TORPOR_KEY"), "An operator's key file (torporctl keygen); the relay must list its DID with --operator. Default $TORPOR_KEY.")
	fs.BoolVar(&a.json, "json", false, "Print the relay's JSON answer.")
	timeScaleFlag(fs, &a.scale)
	fs.StringVar(&a.target, "target", "", "start: the TUF target name of the build to offer.")
	fs.StringVar(&a.version, "version", "", "start: the build's version.")
	fs.StringVar(&a.sha256, "sha256", "", "start: the build's SHA-256 (hex), as its targets metadata says.")
	fs.StringVar(&a.percents, "waves", "1,10,50,100", "start: the waves' cumulative percents of the devices, the last 100.")
	fs.StringVar(&a.failureTypes, "failure-types", "", "start: the outcomes that count as failures: rolled-back, refused or all (comma-separated; default all).")
	fs.IntVar(&a.minExecuted, "min-executed", 0, "start: how many devices must have reported before the failure rate is judged.")
	fs.Float64Var(&a.threshold, "threshold", 0, "start: the failure rate, in percent of the devices that reported, that pauses the rollout; 0 never pauses it.")
	fs.DurationVar(&a.waveTime, "wave-time", 0, "start: how long a wave runs before the next starts without its silent devices (default 1h).")
	fs.StringVar(&a.devices, "devices", "", "start: the devices' DIDs, comma-separated (default every device of the relay, or with --tenant of the tenant).")
	fs.StringVar(&a.reason, "reason", "", "pause, abort: why, for the record.")
	fs.StringVar(&a.tenant, "tenant", "", "On a hosted relay: the tenant's owner DID, to run that tenant's rollouts over its devices (as an operator its owner named) instead of the relay's own (docs/tenants.md).")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 || a.key == "" {
		return errUsage
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	c.Tenant = a.tenant
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	raw, err := a.call(ctx, c, fs.Arg(0), fs.Args()[1:], e.stdout)
	if err != nil || !a.json {
		return err
	}
	fmt.Fprintln(e.stdout, strings.TrimSpace(string(raw)))
	return nil
}

// call runs the subcommand sub with its arguments rest (the rollout's id)
// and prints the answer unless --json; it returns the relay's JSON.
func (a rolloutArgs) call(ctx context.Context, c *operatorapi.Client, sub string, rest []string, w io.Writer) ([]byte, error) {
	if sub == "status" && len(rest) == 0 {
		l, raw, err := c.Rollouts(ctx)
		if err == nil && !a.json {
			for _, r := range l.Rollouts {
				printRollout(w, r)
			}
		}
		return raw, err
	}
	if len(rest) != 1 {
		return nil, usageError{sub + " takes a rollout id"}
	}
	var r operatorapi.Rollout
	var raw []byte
	var err error
	switch sub {
	case "start":
		var s operatorapi.RolloutStart
		if s, err = a.start(rest[0]); err != nil {
			return nil, err
		}
		r, raw, err = c.StartRollout(ctx, s)
	case "status":
		r, raw, err = c.GetRollout(ctx, rest[0])
	case "pause", "resume", "abort":
		r, raw, err = c.ChangeRollout(ctx, rest[0], sub, a.reason)
	default:
		return nil, usageError{fmt.Sprintf("unknown subcommand %q: want start, status, pause, resume or abort", sub)}
	}
	if err == nil && !a.json {
		printRollout(w, r)
	}
	return raw, err
}

// start builds the start request of rollout id from the flags.
func (a rolloutArgs) start(id string) (operatorapi.RolloutStart, error) {
	if a.target == "" || a.version == "" {
		return operatorapi.RolloutStart{}, usageError{"start needs --target and --version"}
	}
	s := operatorapi.RolloutStart{ID: id, Target: operatorapi.RolloutTarget{Name: a.target, Version: a.version, SHA256: a.sha256},
		Criteria: operatorapi.RolloutCriteria{MinExecuted: a.minExecuted, ThresholdPercent: a.threshold},
		WaveTime: int64(a.waveTime / time.Second), Devices: splitList(a.devices), Percents: nil}
	s.Criteria.FailureTypes = splitList(a.failureTypes)
	for _, p := range splitList(a.percents) {
		n, err := strconv.Atoi(p)
		if err != nil {
			return s, usageError{fmt.Sprintf("--waves: %q is not a whole percent", p)}
		}
		s.Percents = append(s.Percents, n)
	}
	if a.waveTime < 0 || a.waveTime%time.Second != 0 {
		return s, errors.New("--wave-time: a positive whole number of seconds")
	}
	return s, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// printRollout prints r: its state, totals, waves and latest failures.
func printRollout(w io.Writer, r operatorapi.Rollout) {
	fmt.Fprintf(w, "rollout %s: %s %s, %s", r.ID, r.Target.Name, r.Target.Version, r.State)
	if r.Reason != "" {
		fmt.Fprintf(w, " (%s)", r.Reason)
	}
	n := r.Counts
	fmt.Fprintf(w, "\n  %d devices: %d installed, %d rolled back, %d refused, %d pending, %d waiting",
		n.Devices, n.Installed, n.RolledBack, n.Refused, n.Pending, n.Waiting)
	if n.Left > 0 {
		fmt.Fprintf(w, ", %d left", n.Left)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  WAVE\tPERCENT\tCOHORTS\tSTARTED\tDEVICES\tINSTALLED\tFAILED\tPENDING")
	for i, wv := range r.Waves {
		started := "-"
		if !wv.Started.IsZero() {
			started = wv.Started.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "  %d\t%d %%\t%d\t%s\t%d\t%d\t%d\t%d\n", i+1, wv.Percent, len(wv.Cohorts), started, wv.Counts.Devices,
			wv.Counts.Installed, wv.Counts.Failed(), wv.Counts.Pending)
	}
	tw.Flush()
	for _, f := range r.Failures {
		fmt.Fprintf(w, "  %s %s at %s: %s\n", f.Device, f.Outcome, f.At.UTC().Format(time.RFC3339), f.Reason)
	}
}
