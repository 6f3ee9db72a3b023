package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/torpor-dev/torpor/transport/operatorapi"
)

func init() {
	register(&subcommand{
		name:  "audit",
		args:  "--relay URL --key FILE [--since DUR] [--limit N] [--json]",
		short: "Print the relay's audit log of operator actions, newest first (docs/operations.md, \"The audit log\").",
		run:   runAudit,
	})
}

// auditFlags are audit's flags beside fleet's --relay, --key and
// --time-scale.
type auditFlags struct {
	fleetFlags
	since time.Duration
	limit int
}

// runAudit prints the audit log, page after page, until --limit records
// or the first one older than --since, measured on the relay's clock
// (the Now of its first answer).
func runAudit(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	var f auditFlags
	f.fleetFlags.register(fs, true)
	fs.DurationVar(&f.since, "since", 0, "Only the records of this long before the relay's clock's now, such as 24h. Default: all.")
	fs.IntVar(&f.limit, "limit", 100, "At most this many records.")
	fs.BoolVar(&f.json, "json", false, "Print the records as a JSON array (operatorapi.AuditRecord).")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() != 0:
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	case f.relay == "" || f.key == "":
		return usageError{"--relay and --key are required"}
	case f.limit < 1 || f.since < 0:
		return usageError{"--limit must be positive and --since not negative"}
	}
	key, origin, clk, err := f.identity(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c := &operatorapi.Client{Origin: origin, Key: key, Clock: clk}
	recs, dropped, err := readAudit(ctx, c, f.since, f.limit)
	if err != nil {
		return err
	}
	if f.json {
		b, _ := json.Marshal(recs)
		fmt.Fprintf(e.stdout, "%s\n", b)
		return nil
	}
	printAudit(e.stdout, recs, dropped)
	return nil
}

// readAudit reads up to limit records, newest first, none older than
// since before the relay's now (no bound when since is zero), and the
// count of records the log's bound dropped.
func readAudit(ctx context.Context, c *operatorapi.Client, since time.Duration, limit int) ([]operatorapi.AuditRecord, uint64, error) {
	var out []operatorapi.AuditRecord
	q := operatorapi.AuditQuery{}
	for {
		q.Limit = min(limit-len(out), 500)
		p, err := c.Audit(ctx, q)
		if err != nil {
			return nil, 0, err
		}
		if since > 0 && q.Since.IsZero() {
			q.Since = p.Now.Add(-since)
		}
		for _, r := range p.Records {
			if !q.Since.IsZero() && r.Time.Before(q.Since) {
				return out, p.Dropped, nil
			}
			out = append(out, r)
		}
		if p.Next == 0 || len(out) >= limit {
			return out, p.Dropped, nil
		}
		q.Before = p.Next
	}
}

// printAudit prints the records as a table.
func printAudit(w io.Writer, recs []operatorapi.AuditRecord, dropped uint64) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tOPERATOR\tACTION\tDEVICE\tOUTCOME\tDETAIL")
	for _, r := range recs {
		action, outcome, detail := r.Action, r.Outcome, r.Detail
		if r.Command != "" {
			action += " " + r.Command
		}
		if r.Reason != "" {
			outcome += ": " + r.Reason
		}
		if r.ObjectID != "" {
			detail += " object " + r.ObjectID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.UTC().Format("2006-01-02 15:04:05Z"), orDash(r.Operator), action,
			orDash(r.Device), outcome, detail)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d records", len(recs))
	if dropped > 0 {
		fmt.Fprintf(w, "; the log's bound dropped %d older ones", dropped)
	}
	fmt.Fprintln(w)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
