package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

func init() {
	register(&subcommand{
		name:  "queue",
		args:  "list|purge --relay URL --key FILE --agent DID [--sender DID | --all]",
		short: "List or purge a device's queue on its relay, as one of the relay's operators (docs/operations.md).",
		run:   runQueue,
	})
}

// queueArgs are the flags of queue.
type queueArgs struct {
	relay, key, agent, sender string
	all, json                 bool
	scale                     float64
}

// runQueue lists a device's queued records (metadata, never bodies) or
// purges those of one sender or all of them. The relay must list the
// key's DID among its operators (--operator, --operators-file).
func runQueue(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	var a queueArgs
	fs.StringVar(&a.relay, "relay", envOr("TORPOR_RELAY", "http://127.0.0.1:8080"), "The relay, its public origin. Default $TORPOR_RELAY.")
	fs.StringVar(&a.key, "key", os.Getenv("TORPOR_KEY"), "An operator's key file (torporctl keygen); the relay must list its DID with --operator. Default $TORPOR_KEY.")
	fs.StringVar(&a.agent, "agent", "", "The device's agent DID.")
	fs.StringVar(&a.sender, "sender", "", "Only the records of this sender DID.")
	fs.BoolVar(&a.all, "all", false, "purge: every record of the device (purge needs --sender or --all).")
	fs.BoolVar(&a.json, "json", false, "Print the relay's JSON answer.")
	timeScaleFlag(fs, &a.scale)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || a.agent == "" || a.key == "" {
		return errUsage
	}
	method, err := queueMethod(fs.Arg(0), a)
	if err != nil {
		return err
	}
	if _, err := did.Parse(a.agent); err != nil {
		return fmt.Errorf("--agent: %w", err)
	}
	if a.sender != "" {
		if _, err := did.Parse(a.sender); err != nil {
			return fmt.Errorf("--sender: %w", err)
		}
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var ans operatorapi.QueueAnswer
	var raw []byte
	if method == http.MethodDelete {
		ans, raw, err = c.PurgeQueue(ctx, a.agent, a.sender, a.all)
	} else {
		ans, raw, err = c.ListQueue(ctx, a.agent, a.sender)
	}
	if err != nil {
		return err
	}
	if a.json {
		fmt.Fprintln(e.stdout, strings.TrimSpace(string(raw)))
		return nil
	}
	printQueue(e.stdout, a, ans)
	return nil
}

// queueMethod returns the HTTP method of the subcommand and checks its
// selection: purge needs exactly one of --sender and --all.
func queueMethod(sub string, a queueArgs) (string, error) {
	switch sub {
	case "list":
		if a.all {
			return "", usageError{"list takes --sender, or nothing for every record; --all is for purge"}
		}
		return http.MethodGet, nil
	case "purge":
		if (a.sender == "") == !a.all {
			return "", usageError{"purge needs --sender DID or --all (not both)"}
		}
		return http.MethodDelete, nil
	}
	return "", usageError{fmt.Sprintf("unknown subcommand %q: want list or purge", sub)}
}

// client is the operator API client of the key, for the relay.
func (a queueArgs) client(ctx context.Context) (*operatorapi.Client, error) {
	k, err := loadKey(a.key)
	if errors.Is(err, errNoKeyFile) || errors.Is(err, errNotKeyFile) {
		return nil, fmt.Errorf("%w (--key takes the path of a key file written by keygen)", err)
	}
	if err != nil {
		return nil, err
	}
	origin, err := bearer.NormalizeAudience(a.relay)
	if err != nil {
		return nil, fmt.Errorf("--relay: %w", err)
	}
	clk, err := relayClock(ctx, origin, a.scale)
	if err != nil {
		return nil, err
	}
	return &operatorapi.Client{Origin: origin, Key: k, Clock: clk}, nil
}

func printQueue(w io.Writer, a queueArgs, ans operatorapi.QueueAnswer) {
	if ans.Purged != nil {
		what := "every record"
		if a.sender != "" {
			what = "the records of " + a.sender
		}
		fmt.Fprintf(w, "purged %d records (%d bytes) of %s for %s\n", *ans.Purged, ans.Bytes, what, ans.Agent)
		return
	}
	fmt.Fprintf(w, "%d records, %d bytes queued for %s\n", ans.Messages, ans.Bytes, ans.Agent)
	if len(ans.Damaged) > 0 {
		fmt.Fprintf(w, "%d damaged records withheld from the device (they fail their checksum; the queue file is damaged): seqs %v\n"+
			"  torporctl queue purge --all deletes them with the rest; see docs/operations.md, \"Store faults\"\n", len(ans.Damaged), ans.Damaged)
	}
	if len(ans.Records) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tFROM\tKIND\tBYTES\tENQUEUED\tEXPIRES")
	for _, r := range ans.Records {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", r.Seq, r.From, r.Kind, r.Bytes, r.EnqueuedAt.Format(time.RFC3339), r.ExpiresAt.Format(time.RFC3339))
	}
	tw.Flush()
}
