package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/safetext"
	"github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
)

func init() {
	register(&subcommand{
		name:  "device",
		args:  "OPERATION [flags] DEVICE [ARGS]",
		short: "Manage a device over MQTT with signed commands: status, set-mode, halt, resume, ... (device help).",
		run:   runDevice,
	})
}

const deviceHelp = `usage: torporctl device OPERATION [flags] DEVICE [ARGS]
       (flags anywhere; an ARG that begins with "-" goes after a "--")

Signs a command with your operator key, publishes it on the device's MQTT
command topic and prints the device's signed reply. A sleeping device gets
the command at its next wake (it waits in its broker session); without a
reply within --wait the command is reported as waiting.

operations:
  status                          the device's state (and its retained status)
  lost                            hand-offs a kill may have cut off (at-most-once
                                  notify): the objects the application may not have
  set-mode MODE                   always_on, session, hourly_wake or sleep
                                  (--window, --offset, --wake-at, --wake-in)
  wake-now                        open a window now where the wake source allows
  drain                           what the current wake drained
  rotate-keys                     a new identity key; the old one signs the handover
  refill-keypackages              refill the MLS KeyPackage pool (--count)
  confirm HOLD | deny HOLD        run or drop an action held for the owner
  reconcile KEY                   resolve an indeterminate idempotency key
                                  (--happened with --receipt, or --released; --note)
  halt | resume                   stop / restart all autonomous action (--note)
  config get KEY                  read a setting (mode, wakeAt, window, owner, ...)
  config set KEY VALUE            change one (mode, wakeAt)
  reboot                          (--delay)
  watch                           print the device's statuses and events as they come
  admit DID                       admit a device on its relay (--relay, --key):
                                  it leaves probation; over HTTP, not MQTT

DEVICE is the device's name (its MQTT topic level) or its DID, which
torporctl resolves to the name it pinned or the device's retained status names.

Exit status: 0 the device answered ok; 1 it answered failed, rejected or
indeterminate (or an error); 3 no reply within --wait (the command waits for
the device). Environment: TORPOR_BROKER, TORPOR_KEY, TORPOR_MQTT_PREFIX.
Run "torporctl device OPERATION -h" for an operation's flags.
`

// deviceFlags are the flags every device operation takes.
type deviceFlags struct {
	broker, key, prefix, didStr string
	knownDevices, passwordFile  string
	wait, ttl                   time.Duration
	cbor, json                  bool
	seq                         uint64
	// relay and scale date the commands on the relay's clock when it
	// runs scaled (--time-scale), as its devices' clocks run.
	relay string
	scale float64
}

func (f *deviceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.broker, "broker", envOr("TORPOR_BROKER", "mqtt://127.0.0.1:1883"), "The MQTT 5 broker: mqtt://HOST:PORT, mqtts://HOST:PORT, or HOST:PORT for plain MQTT. Default $TORPOR_BROKER.")
	fs.StringVar(&f.key, "key", os.Getenv("TORPOR_KEY"), "Your operator key file (torporctl keygen); its DID must be in the device's operator allowlist. Default $TORPOR_KEY.")
	fs.StringVar(&f.prefix, "prefix", envOr("TORPOR_MQTT_PREFIX", mqtt.DefaultPrefix), "The topic prefix. Default $TORPOR_MQTT_PREFIX.")
	fs.StringVar(&f.didStr, "did", "", "The device's DID, which the command names and which must sign the reply; it overrides the pin in --known-devices. Empty means the pinned DID, or on first contact the DID that signed the device's retained status.")
	fs.StringVar(&f.knownDevices, "known-devices", defaultKnownDevices(), "The file pinning device names to DIDs (\"NAME DID\" lines, like SSH's known_hosts). Default $TORPOR_KNOWN_DEVICES or ~/.config/torpor/known_devices.")
	fs.StringVar(&f.passwordFile, "mqtt-password-file", os.Getenv("TORPOR_MQTT_PASSWORD_FILE"), "A file with a static MQTT password for an external broker that checks passwords (torporctl mqtt acl); without it a DID Bearer token is sent, as the embedded broker wants. Default $TORPOR_MQTT_PASSWORD_FILE.")
	fs.DurationVar(&f.wait, "wait", 15*time.Second, "How long to wait for the reply; 0 sends without waiting.")
	fs.DurationVar(&f.ttl, "ttl", command.DefaultTTL, "The command's lifetime: a device that wakes later refuses it, and the broker drops it.")
	fs.BoolVar(&f.cbor, "cbor", false, "Send the command as CBOR (MQTT content type application/cbor); the reply comes back in CBOR.")
	fs.BoolVar(&f.json, "json", false, "Print JSON instead of text.")
	fs.StringVar(&f.relay, "relay", envOr("TORPOR_RELAY", "http://127.0.0.1:8080"), "The relay whose clock --time-scale reads (its /healthz). Default $TORPOR_RELAY.")
	timeScaleFlag(fs, &f.scale)
	fs.Uint64Var(&f.seq, "seq", 0, "The command's sequence number; 0 picks the next one (milliseconds since 1970, kept increasing per key and device in KEY.seq).")
}

// operationFirst returns args with the operation (and the get or set of
// "config get|set") first, when the flags every operation takes (and
// admit's --relay) come before it: torporctl device --broker B status D.
func operationFirst(args []string) []string {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	new(deviceFlags).register(fs)
	var op []int
	for i := 0; i < len(args) && len(op) < 2; i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if name, isFlag := flagName(fs, a); isFlag {
			if !strings.Contains(a, "=") && takesValue(fs, name) {
				i++
			}
			continue
		}
		op = append(op, i)
		if a != "config" {
			break
		}
	}
	if len(op) == 0 {
		return args
	}
	out := make([]string, 0, len(args))
	for _, i := range op {
		out = append(out, args[i])
	}
	for i, a := range args {
		if !slices.Contains(op, i) {
			out = append(out, a)
		}
	}
	return out
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// deviceOp is one operation: its flags, and how its arguments become the
// command's.
type deviceOp struct {
	name  string // the command's op, or "watch"
	args  string // synopsis after DEVICE
	flags func(fs *flag.FlagSet) func(rest []string) (any, error)
}

func runDevice(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(e.stdout, deviceHelp)
		if len(args) == 0 {
			return exitError{2}
		}
		return nil
	}
	args = operationFirst(args)
	if args[0] == "admit" {
		return runDeviceAdmit(ctx, e, args[1:])
	}
	if args[0] == "config" && len(args) > 1 && (args[1] == "get" || args[1] == "set") {
		args = append([]string{"config-" + args[1]}, args[2:]...) // "config get" is config-get
	}
	op, ok := deviceOps[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "torporctl device: unknown operation %q; run 'torporctl device help'\n", args[0])
		return exitError{2}
	}
	ofs := flag.NewFlagSet("torporctl device "+args[0], flag.ContinueOnError)
	ofs.SetOutput(e.stderr)
	var df deviceFlags
	df.register(ofs)
	parse := op.flags(ofs)
	ofs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: torporctl device %s [flags] DEVICE %s\n\nflags:\n", args[0], op.args)
		ofs.PrintDefaults()
	}
	if err := parseFlags(ofs, args[1:]); err != nil {
		return err
	}
	if ofs.NArg() < 1 {
		ofs.Usage()
		return exitError{2}
	}
	device, rest := ofs.Arg(0), ofs.Args()[1:]
	cmdArgs, err := parse(rest)
	if err != nil {
		fmt.Fprintf(e.stderr, "torporctl device %s: %v\n", args[0], err)
		ofs.Usage()
		return exitError{2}
	}
	if _, err := did.Parse(device); err != nil {
		if err := mqtt.CheckName(device); err != nil {
			return err
		}
	}
	s, err := dialDevice(ctx, &df, device)
	if err != nil {
		return err
	}
	defer s.close()
	s.wakeInOnRelayClock(ofs, cmdArgs)
	s.stderr, s.view = e.stderr, args[0]
	if a, ok := cmdArgs.(*watchArgs); ok {
		return s.watch(ctx, e, a)
	}
	return s.command(ctx, e, op.name, cmdArgs)
}

// deviceSession is one torporctl run against one device.
type deviceSession struct {
	f      *deviceFlags
	key    *did.PrivateKey
	device string
	op     *command.Operator
	known  *command.KnownDevices
	clk    clock.Clock // the relay's clock under --time-scale, else clock.Real
	stderr io.Writer
	// view is the operation as typed, when it prints a command's answer
	// its own way ("lost").
	view string
}

func dialDevice(ctx context.Context, f *deviceFlags, device string) (*deviceSession, error) {
	if f.key == "" {
		return nil, errors.New("no operator key: pass --key FILE or set TORPOR_KEY (torporctl keygen makes one)")
	}
	k, err := loadKey(f.key)
	if err != nil {
		return nil, fmt.Errorf("operator key (--key or TORPOR_KEY): %w", err)
	}
	if err := mqtt.CheckPrefix(f.prefix); err != nil {
		return nil, err
	}
	known, err := command.LoadKnownDevices(f.knownDevices)
	if err != nil {
		return nil, fmt.Errorf("known devices: %w", err)
	}
	var pw []byte
	if f.passwordFile != "" {
		if pw, err = os.ReadFile(f.passwordFile); err != nil {
			return nil, fmt.Errorf("--mqtt-password-file: %w", err)
		}
	}
	clk, err := relayClock(ctx, strings.TrimRight(f.relay, "/"), f.scale)
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	op, err := command.DialOperator(dctx, command.OperatorConfig{Broker: f.broker, Prefix: f.prefix, Key: k, Password: bytes.TrimSpace(pw),
		Clock: clk}) // the broker checks its token on the real clock (broker.Config.Clock)
	if err != nil {
		return nil, err
	}
	if device, err = nameOf(dctx, op, known, f, device); err != nil {
		op.Close(context.Background())
		return nil, err
	}
	if err := op.Watch(dctx, device); err != nil {
		op.Close(context.Background())
		return nil, err
	}
	return &deviceSession{f: f, key: k, device: device, op: op, known: known, clk: clk}, nil
}

// wakeInOnRelayClock dates set-mode's --wake-in on the session's clock,
// the relay's under --time-scale, which the device's runs as: the flag
// was read on the real clock, before the session had one.
func (s *deviceSession) wakeInOnRelayClock(fs *flag.FlagSet, args any) {
	a, ok := args.(*command.SetModeArgs)
	f := fs.Lookup("wake-in")
	if !ok || f == nil {
		return
	}
	if d, _ := f.Value.(flag.Getter).Get().(time.Duration); d != 0 {
		t := s.clk.Now().Add(d).UTC().Truncate(time.Second)
		a.WakeAt = &t
	}
}

func (s *deviceSession) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.op.Close(ctx)
}

// nextSeq picks the command's sequence number (--seq, else
// command.NextSeq) and records it in KEY.seq before the command leaves.
func (s *deviceSession) nextSeq(dev did.DID) (uint64, error) {
	return command.SeqFile{Path: s.f.key + ".seq"}.Next(dev, s.f.seq, s.clk.Now())
}

func printJSONTo(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printCommand prints a command's outcome for people.
func printCommand(w io.Writer, o commandOutput) {
	w = safetext.Writer(w) // what the device sent, shown as it is
	fmt.Fprintf(w, "%s %s (%s)\n", o.Op, o.Name, shortDID(o.Device))
	switch {
	case o.RefusedBy != "":
		fmt.Fprintf(w, "  refused (wrong-device): the device on %s's topic is %s, not %s\n", o.Name, o.RefusedBy, o.Device)
		return
	case o.Command == "" && o.Status != nil:
		fmt.Fprintf(w, "  the device is %s: answered from its retained status, signed %s ago (%s); no command sent\n",
			o.Status.State, (time.Duration(*o.StatusAgeMs) * time.Millisecond).Round(time.Second), o.StatusIssuedAt.Format(time.RFC3339))
		printStatus(w, "  ", *o.Status)
		return
	case o.Reply == nil:
		fmt.Fprintf(w, "  no reply yet: the command (id %s, seq %d) waits for the device until %s\n", o.Command, o.Seq, o.Expires.Format(time.RFC3339))
		if o.Status != nil {
			fmt.Fprintf(w, "  its retained status, signed %s ago:\n", (time.Duration(*o.StatusAgeMs) * time.Millisecond).Round(time.Second))
			printStatus(w, "  ", *o.Status)
		}
		return
	}
	r := o.Reply
	line := "  " + string(r.Outcome)
	if r.Reason != "" {
		line += " (" + r.Reason + ")"
	}
	if r.Detail != "" {
		line += ": " + r.Detail
	}
	fmt.Fprintln(w, line)
	if len(r.Result) == 0 {
		return
	}
	if o.Op == command.OpStatus {
		printStatusResult(w, r.Result)
		return
	}
	printFields(w, "  ", r.Result)
}

func shortDID(d string) string {
	if len(d) > 24 {
		return d[:16] + "…" + d[len(d)-6:]
	}
	return d
}

// printStatus prints a device status.
func printStatus(w io.Writer, indent string, st envelope.Status) {
	state := string(st.State)
	if !st.Since.IsZero() {
		state += " since " + st.Since.Format(time.RFC3339)
	}
	fmt.Fprintf(w, "%sstate:   %s\n", indent, state)
	if st.Mode != "" {
		mode := st.Mode
		if st.Window != nil && st.Mode == "hourly_wake" {
			mode += fmt.Sprintf(" (window at minute %d for %ds, offset %ds)", st.Window.Minute, st.Window.LengthSec, st.Window.OffsetSec)
		}
		fmt.Fprintf(w, "%smode:    %s\n", indent, mode)
	}
	if st.NextWake != nil {
		fmt.Fprintf(w, "%snext wake: %s\n", indent, st.NextWake.Format(time.RFC3339))
	}
	if st.Version != "" {
		fmt.Fprintf(w, "%sversion: %s\n", indent, st.Version)
	}
	fmt.Fprintf(w, "%shalted:  %s\n", indent, map[bool]string{true: "yes: consequential actions are held until resume", false: "no"}[st.Halted])
	if st.Held > 0 || st.Indeterminate > 0 {
		fmt.Fprintf(w, "%swaiting for an operator: %d held actions, %d indeterminate keys\n", indent, st.Held, st.Indeterminate)
	}
	if st.Lost > 0 {
		fmt.Fprintf(w, "%spossibly lost hand-offs: %d (torporctl device lost)\n", indent, st.Lost)
	}
}

// printStatusResult prints the result of the status command.
func printStatusResult(w io.Writer, raw json.RawMessage) {
	var r struct {
		Status envelope.Status `json:"status"`
		Ledger map[string]int
		Holds  []struct {
			Key, Purpose, Reason string
		}
		Indeterminate []struct{ Key, Action string }
		LastWake      *struct {
			At      time.Time `json:"at"`
			Reason  string    `json:"reason"`
			AwakeMs int64     `json:"awakeMs"`
		} `json:"lastWake"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		printFields(w, "  ", raw)
		return
	}
	printStatus(w, "  ", r.Status)
	if r.LastWake != nil {
		fmt.Fprintf(w, "  last wake: %s (%s, awake %v)\n", r.LastWake.At.Format(time.RFC3339), r.LastWake.Reason, time.Duration(r.LastWake.AwakeMs)*time.Millisecond)
	}
	if len(r.Ledger) > 0 {
		var parts []string
		for _, k := range sortedKeys(r.Ledger) {
			parts = append(parts, fmt.Sprintf("%d %s", r.Ledger[k], k))
		}
		fmt.Fprintf(w, "  ledger:  %s\n", strings.Join(parts, ", "))
	}
	for _, h := range r.Holds {
		fmt.Fprintf(w, "  held:    %s  %s (%s)\n", h.Key, h.Purpose, h.Reason)
	}
	for _, k := range r.Indeterminate {
		fmt.Fprintf(w, "  indeterminate: %s  %s\n", k.Key, k.Action)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// printFields prints a JSON object's members one per line.
func printFields(w io.Writer, indent string, raw json.RawMessage) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		fmt.Fprintf(w, "%s%s\n", indent, raw)
		return
	}
	for _, k := range sortedKeys(m) {
		v := string(m[k])
		var s string
		if json.Unmarshal(m[k], &s) == nil {
			v = s
		}
		fmt.Fprintf(w, "%s%s: %s\n", indent, k, v)
	}
}

// watchArgs are the arguments of watch.
type watchArgs struct {
	until   string
	timeout time.Duration
}

// watch prints statuses and events as they arrive, until --until's state
// is reported or --timeout passes.
func (s *deviceSession) watch(ctx context.Context, e *env, a *watchArgs) error {
	// Statuses and events of the pinned (or given) DID only; any signer
	// for a device not pinned yet.
	dev, _ := s.known.Lookup(s.device)
	if s.f.didStr != "" {
		var err error
		if dev, err = did.Parse(s.f.didStr); err != nil {
			return err
		}
	}
	events, status, err := s.op.Events(s.device)
	if err != nil {
		return err
	}
	if a.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.timeout)
		defer cancel()
	}
	for {
		select {
		case <-ctx.Done():
			if a.until != "" {
				return fmt.Errorf("%s did not report state %s within %v", s.device, a.until, a.timeout)
			}
			return nil
		case m := <-status:
			st, _, err := envelope.VerifyStatus(m.ContentType, m.Payload, dev, s.clk.Now())
			if err != nil {
				fmt.Fprintf(e.stderr, "ignored an invalid status: %v\n", err)
				continue
			}
			if s.f.json {
				printJSONTo(e.stdout, map[string]any{"status": st})
			} else {
				out := safetext.Writer(e.stdout)
				fmt.Fprintf(out, "status %s (%s)\n", s.device, shortDID(st.Device))
				printStatus(out, "  ", st)
			}
			if a.until != "" && string(st.State) == a.until {
				return nil
			}
		case m := <-events:
			ev, data, _, err := envelope.VerifyEvent(m.ContentType, m.Payload, dev, s.clk.Now())
			if err != nil {
				fmt.Fprintf(e.stderr, "ignored an invalid event: %v\n", err)
				continue
			}
			if s.f.json {
				printJSONTo(e.stdout, map[string]any{"event": ev, "data": data})
			} else {
				fmt.Fprintf(safetext.Writer(e.stdout), "event %s: %s %s\n", ev.Kind, ev.Detail, data)
			}
		}
	}
}
