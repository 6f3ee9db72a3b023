package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"sort"
	"time"

	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/store/ledger"
)

const operatorHelp = `Operator commands work on the agent's bbolt file while the daemon is stopped
(bbolt admits one process); they take the daemon's flags and configuration file.

  torpor-agent status     [flags]             mode, last wake, halt, policy, holds, ledger
  torpor-agent ledger     [flags]             list the idempotency ledger
  torpor-agent reconcile  [flags] KEY         resolve an indeterminate key: --happened with
                                              --receipt (and --effect-id), or --released
  torpor-agent holds      [flags]             list the actions waiting for the owner
  torpor-agent confirm    [flags] KEY         run a held action now (through its handler)
  torpor-agent deny       [flags] KEY         drop a held action
  torpor-agent halt       [flags]             stop all autonomous action until resume
  torpor-agent resume     [flags]             lift the halt; run held actions a policy allows

The A/B slots of the agent's binary (docs/updates.md) work beside a running daemon:

` + slotsHelp

// opArgs are an operator command's own flags.
type opArgs struct {
	note      string
	happened  bool
	released  bool
	receipt   string
	effectID  string
	jsonOut   bool
	rest      []string
	by        string // who acts: localOperator
	agentArgs *args
}

func parseOp(name string, argv []string, stderr io.Writer) (*opArgs, error) {
	o := &opArgs{agentArgs: &args{set: map[string]bool{}}}
	fs := newFlags(o.agentArgs, stderr)
	fs.Init("torpor-agent "+name, flag.ContinueOnError)
	fs.StringVar(&o.note, "note", "", "Who acted and why; kept with the entry.")
	fs.BoolVar(&o.happened, "happened", false, "reconcile: the system of record shows the effect happened.")
	fs.BoolVar(&o.released, "released", false, "reconcile: the effect verifiably did not happen; the key may run again.")
	fs.StringVar(&o.receipt, "receipt", "", "reconcile --happened: the reconciled result to store as the receipt.")
	fs.StringVar(&o.effectID, "effect-id", "", "reconcile: the effect's identifier at its system of record.")
	fs.BoolVar(&o.jsonOut, "json", false, "Print JSON.")
	if err := fs.Parse(argv); err != nil {
		return nil, err
	}
	fs.Visit(func(f *flag.Flag) { o.agentArgs.set[f.Name] = true })
	o.agentArgs.explicit = o.agentArgs.set["config"]
	o.rest = fs.Args()
	o.by = localOperator(name)
	return o, nil
}

// operator runs an operator command.
func operator(name string, argv []string, stdout, stderr io.Writer) int {
	cmd, ok := operatorCommands[name]
	if name == "help" || !ok {
		fmt.Fprint(stdout, operatorHelp)
		if !ok && name != "help" {
			fmt.Fprintf(stderr, "torpor-agent: unknown command %q\n", name)
			return 2
		}
		return 0
	}
	o, err := parseOp(name, argv, stderr)
	if err != nil {
		return 2
	}
	p, closeFn, err := openPipeline(o.agentArgs)
	if err != nil {
		fmt.Fprintln(stderr, "torpor-agent:", err)
		return 1
	}
	defer closeFn()
	if err := cmd(context.Background(), p, o, stdout); err != nil {
		fmt.Fprintf(stderr, "torpor-agent %s: %v\n", name, err)
		return 1
	}
	return 0
}

// openPipeline opens the agent's bbolt file and pipeline as the daemon
// would (runtime.OpenOffline).
func openPipeline(a *args) (*runtime.Pipeline, func(), error) {
	f, err := a.file()
	if err != nil {
		return nil, nil, err
	}
	b, err := f.Build()
	if err != nil {
		return nil, nil, err
	}
	p, closeFn, err := runtime.OpenOffline(b.Config)
	if err != nil {
		b.Close()
		return nil, nil, err
	}
	return p, func() { closeFn(); b.Close() }, nil
}

type opFunc func(ctx context.Context, p *runtime.Pipeline, o *opArgs, w io.Writer) error

var operatorCommands = map[string]opFunc{
	"status":    opStatus,
	"ledger":    opLedger,
	"reconcile": opReconcile,
	"holds":     opHolds,
	"confirm":   opConfirm,
	"deny":      opDeny,
	"halt":      opHalt,
	"resume":    opResume,
}

func (o *opArgs) key() (string, error) {
	if len(o.rest) != 1 {
		return "", errors.New("want exactly one KEY argument (as listed by holds or ledger)")
	}
	return o.rest[0], nil
}

func opStatus(_ context.Context, p *runtime.Pipeline, o *opArgs, w io.Writer) error {
	r, err := p.Report(0)
	if err != nil {
		return err
	}
	st := map[string]any{"halt": r.Halt, "holds": len(r.Holds), "ledger": r.Ledger}
	if n := r.Lost.Count(); n > 0 {
		st["lostHandOffs"], st["lost"] = n, r.Lost.Kept
	}
	if r.LastWake != nil {
		st["lastWake"] = r.LastWake
	}
	if r.Policy != nil {
		st["policy"] = r.Policy
	}
	return printJSON(w, st)
}

func opLedger(_ context.Context, p *runtime.Pipeline, o *opArgs, w io.Writer) error {
	es, err := p.Entries()
	if err != nil {
		return err
	}
	if o.jsonOut {
		return printJSON(w, es)
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].State > es[j].State })
	for _, e := range es {
		fmt.Fprintf(w, "%-13s %s  action=%s reserved=%s effect=%q %s\n", e.State, e.Key, e.Action,
			e.ReservedAt.Format(time.RFC3339), e.EffectID, e.Note)
	}
	return nil
}

func opReconcile(_ context.Context, p *runtime.Pipeline, o *opArgs, w io.Writer) error {
	key, err := o.key()
	if err != nil {
		return err
	}
	if o.happened == o.released {
		return errors.New("say what the system of record shows: --happened (with --receipt) or --released")
	}
	if o.note == "" {
		return errors.New("--note is required: who reconciled, against what")
	}
	res := ledger.Resolution{Happened: o.happened, Receipt: []byte(o.receipt), EffectID: o.effectID, Note: o.note}
	if _, err := p.Reconcile(o.by, key, res); err != nil {
		return err
	}
	fmt.Fprintf(w, "reconciled %s: %s\n", key, map[bool]string{true: "completed", false: "released"}[o.happened])
	return nil
}

func opHolds(_ context.Context, p *runtime.Pipeline, o *opArgs, w io.Writer) error {
	hs, err := p.Holds()
	if err != nil {
		return err
	}
	if o.jsonOut {
		return printJSON(w, hs)
	}
	for _, h := range hs {
		fmt.Fprintf(w, "%s  purpose=%s reason=%s held=%s expires=%s\n", h.Action.LedgerKey(), h.Action.Purpose,
			h.Reason, h.HeldAt.Format(time.RFC3339), h.Action.Expires.Format(time.RFC3339))
	}
	return nil
}

func opConfirm(ctx context.Context, p *runtime.Pipeline, o *opArgs, w io.Writer) error {
	key, err := o.key()
	if err != nil {
		return err
	}
	done, err := p.Confirm(ctx, key)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "ran %s (%d delivered): ledger %s %s\n", key, done.Delivered, done.Entry.State, done.Entry.Receipt)
	return nil
}

func opDeny(_ context.Context, p *runtime.Pipeline, o *opArgs, w io.Writer) error {
	key, err := o.key()
	if err != nil {
		return err
	}
	if _, err := p.Deny(key); err != nil {
		return err
	}
	fmt.Fprintf(w, "denied %s\n", key)
	return nil
}

func opHalt(_ context.Context, p *runtime.Pipeline, o *opArgs, w io.Writer) error {
	if err := p.Halt(o.by, o.note); err != nil {
		return err
	}
	fmt.Fprintln(w, "halted: consequential actions are held until resume")
	return nil
}

func opResume(ctx context.Context, p *runtime.Pipeline, o *opArgs, w io.Writer) error {
	n, err := p.Resume(ctx, o.by, o.note)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "resumed: %d held actions ran under the policy\n", n)
	return nil
}

// localOperator names who runs an offline command, as the MQTT commands
// name the operator's DID and the command: the local user and the
// command.
func localOperator(name string) string {
	who := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		who = u.Username
	}
	if who == "" {
		who = "unknown user"
	}
	return fmt.Sprintf("local user %s (torpor-agent %s)", who, name)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
