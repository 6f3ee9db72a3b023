package manage

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/internal/version"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/gate"
	"github.com/torpor-dev/torpor/store/ledger"
	"github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/wake"
)

// CommandsConfig configures operators' commands over MQTT (see Commands).
type CommandsConfig struct {
	// Broker is the MQTT 5 broker URL (mqtt://host:port, mqtts://...).
	// Required.
	Broker string
	TLS    *tls.Config
	// Prefix is the topic prefix; empty means mqtt.DefaultPrefix.
	Prefix string
	// Name is the device's topic level and MQTT client id; empty means
	// the agent's DID. Keep it stable: the broker keeps the session
	// (and the commands sent while the device sleeps) under it.
	Name string
	// Operators are the DIDs whose commands the agent accepts. Required:
	// without one, nobody could command the device.
	Operators []did.DID
	// SessionExpiry is how long the broker keeps the session while the
	// device sleeps; zero means mqtt.DefaultSessionExpiry. It must exceed
	// the longest sleep.
	// Password, when set, is sent to the broker instead of a DID Bearer
	// token (mqtt.Config.Security.Password; an external broker's static password).
	Password      []byte
	SessionExpiry time.Duration
	// RotateKey installs next as the agent's identity (key file, MLS
	// credentials, the relay's registration), given the handover the old
	// key signed. Nil makes rotate-keys unsupported.
	RotateKey func(ctx context.Context, next *did.PrivateKey, handover []byte) error
	// Reboot restarts the device (or the agent's process). Nil makes
	// reboot unsupported.
	Reboot func() error
	// FlushTimeout bounds the clean end of the MQTT session before the
	// agent sleeps; zero means 10 seconds. It is a network wait: it runs
	// on the agent's clock without its time scale (clock.Unscaled).
	FlushTimeout time.Duration
	// Logger receives the MQTT client's logs; nil discards them.
	Logger *slog.Logger
}

// Commands carries out operators' signed commands on a runtime.Agent and keeps its
// MQTT session (package transport/mqtt) in step with the duty cycle: the
// client connects when a wake begins and ends its session cleanly, with
// status asleep and the next wake, when the wake ends; commands sent
// meanwhile wait in the broker session for the next wake. It implements
// Device and mqtt.StatusReporter.
//
// It implements runtime.Management: attach it to the agent with
// Agent.SetManagement, and close it after Run:
//
//	a, _ := runtime.New(cfg)
//	cmds, _ := manage.NewCommands(a, ccfg)
//	a.SetManagement(cmds)
//	err := a.Run(ctx) // ends with cmds.Close: status stopped
type Commands struct {
	a   *runtime.Agent
	cfg CommandsConfig
	log *slog.Logger

	mu sync.Mutex
	// mu guards all following fields.
	client *Server
	key    *did.PrivateKey // the identity the client signs with (rotate-keys changes it)
	closed bool
}

var (
	_ mqtt.StatusReporter = (*Commands)(nil)
	_ runtime.Management  = (*Commands)(nil)
)

// NewCommands checks cfg and returns the commands of agent a. It does not
// connect: the first wake does.
func NewCommands(a *runtime.Agent, cfg CommandsConfig) (*Commands, error) {
	if cfg.Broker == "" {
		return nil, errors.New("runtime: commands need an MQTT broker URL")
	}
	if len(cfg.Operators) == 0 {
		return nil, errors.New("runtime: commands need at least one operator DID")
	}
	if cfg.Name == "" {
		cfg.Name = a.Config().Key.DID().String()
	}
	if err := (mqtt.Topics{Prefix: cfg.Prefix, Device: cfg.Name}).Validate(); err != nil {
		return nil, err
	}
	if cfg.FlushTimeout == 0 {
		cfg.FlushTimeout = 10 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Commands{a: a, cfg: cfg, log: log.With("component", "commands"), key: a.Config().Key}, nil
}

// Awake implements runtime.Management: it starts the MQTT client
// (connecting in the background) when a wake begins. It does not block.
func (c *Commands) Awake(context.Context) { c.start() }

// Asleep implements runtime.Management: it ends the MQTT session cleanly
// before the agent sleeps until next: status asleep with the next wake, every
// reply acknowledged, a normal DISCONNECT (so the will is not published).
// It blocks for at most FlushTimeout, a network wait that runs on the
// unscaled clock (clock.Unscaled), or until ctx ends.
func (c *Commands) Asleep(ctx context.Context, next time.Time) { c.sleep(ctx, next) }

func (c *Commands) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client != nil || c.closed {
		return
	}
	cl, err := c.newServer(false)
	if err != nil {
		c.log.Error("starting the MQTT client", "err", err)
		return
	}
	c.client = cl
}

// newServer starts the MQTT client on the agent's stores; stopOnly starts
// one that takes no command (mqtt.Config.StopOnly).
func (c *Commands) newServer(stopOnly bool) (*Server, error) {
	pipe := c.a.Pipeline()
	if pipe == nil {
		return nil, errors.New("manage: the agent is not open")
	}
	db, rc, l := pipe.Stores()
	return Start(Config{
		Config: mqtt.Config{Broker: c.cfg.Broker, Prefix: c.cfg.Prefix, Name: c.cfg.Name, Key: c.key, DB: db,
			Timing:   mqtt.Timing{SessionExpiry: c.cfg.SessionExpiry},
			Security: mqtt.Security{TLS: c.cfg.TLS, Password: c.cfg.Password},
			Clock:    c.a.Config().Clock, Logger: c.cfg.Logger,
			Version: version.Get().Short(), StopOnly: stopOnly},
		Operators: c.cfg.Operators, Replay: rc, Ledger: l, Device: c,
	})
}

func (c *Commands) sleep(ctx context.Context, next time.Time) {
	c.mu.Lock()
	cl := c.client
	c.client = nil
	c.mu.Unlock()
	if cl == nil {
		return
	}
	ctx, cancel := clock.WithTimeout(ctx, clock.Unscaled(c.a.Clock()), c.cfg.FlushTimeout)
	defer cancel()
	if err := cl.Sleep(ctx, next); err != nil {
		c.log.Warn("ending the MQTT session before sleep", "err", err)
	}
}

// Close ends the MQTT session with status stopped, for a shutdown. It
// implements runtime.Management; an agent it is attached to calls it when
// Run ends. An agent stopped while asleep has no session: Close connects
// only to publish status stopped (taking no command), so that its retained
// status no longer announces a wake it will not make.
func (c *Commands) Close(ctx context.Context) error {
	c.mu.Lock()
	cl, was := c.client, c.closed
	c.client, c.closed = nil, true
	c.mu.Unlock()
	if was {
		return nil
	}
	if cl == nil {
		var err error
		if cl, err = c.newServer(true); err != nil {
			return err
		}
	}
	return cl.Close(ctx)
}

// Name returns the device's name on the broker (its topic level).
func (c *Commands) Name() string { return c.cfg.Name }

// Client returns the MQTT client of the current wake, nil while asleep.
func (c *Commands) Client() *Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client
}

// Status implements mqtt.StatusReporter: mode, window, next wake, halt,
// held actions, indeterminate keys and possibly lost hand-offs.
func (c *Commands) Status() envelope.Status {
	a := c.a
	m, _ := a.Mode()
	win := c.statusWindow()
	st := envelope.Status{Mode: string(m), Window: &win}
	if next := a.NextWake(); !next.IsZero() {
		n := next.UTC()
		st.NextWake = &n
	}
	if p := a.Pipeline(); p != nil {
		if r, err := p.Report(0); err == nil {
			st.Halted, st.Held, st.Indeterminate = r.Halt.Halted, len(r.Holds), r.Ledger[ledger.Indeterminate.String()]
			st.Lost, st.LostHandOffs = r.Lost.Count(), lostHandOffs(r.Lost)
		}
	}
	return st
}

// lostHandOffs lists the newest envelope.MaxStatusLost of the possibly
// lost hand-offs s keeps, newest first.
func lostHandOffs(s ledger.LostSummary) []envelope.LostHandOff {
	var out []envelope.LostHandOff
	for i := len(s.Kept) - 1; i >= 0 && len(out) < envelope.MaxStatusLost; i-- {
		l := s.Kept[i]
		out = append(out, envelope.LostHandOff{ObjectID: l.ObjectID, Issuer: l.Issuer, Purpose: l.Purpose, Seq: l.Seq, RecordedAt: l.RecordedAt.UTC()})
	}
	return out
}

// Execute implements Device.
func (c *Commands) Execute(ctx context.Context, cmd Command) Result {
	p := c.a.Pipeline()
	if p == nil {
		return Failed("stopping", "the agent is stopping")
	}
	note := fmt.Sprintf("%s (MQTT command %s)", cmd.Operator, cmd.ID)
	switch cmd.Op {
	case command.OpStatus:
		return c.status(p)
	case command.OpSetMode:
		return c.setMode(cmd.Args.(*command.SetModeArgs))
	case command.OpWakeNow:
		return c.wakeNow(cmd.Args.(*command.WakeNowArgs))
	case command.OpDrain:
		return c.drain(ctx)
	case command.OpRotateKeys:
		return c.rotateKeys(ctx)
	case command.OpRefillKeyPackages:
		return c.refill(ctx, cmd.Args.(*command.RefillArgs))
	case command.OpConfirm:
		return c.confirm(ctx, p, cmd.Args.(*command.HoldArgs).Hold)
	case command.OpDeny:
		return c.deny(p, cmd.Args.(*command.HoldArgs).Hold)
	case command.OpReconcile:
		return c.reconcile(p, cmd.Args.(*command.ReconcileArgs), note)
	case command.OpHalt:
		return c.halt(p, cmd.Args.(*command.NoteArgs), note)
	case command.OpResume:
		return c.resume(ctx, p, cmd.Args.(*command.NoteArgs), note)
	case command.OpConfigGet:
		return c.configGet(cmd.Args.(*command.ConfigArgs).Key)
	case command.OpConfigSet:
		a := cmd.Args.(*command.ConfigArgs)
		return c.configSet(a.Key, *a.Value)
	case command.OpReboot:
		return c.reboot(cmd.Args.(*command.RebootArgs))
	case command.OpTime:
		return c.setTime(cmd.Operator, cmd.Args.(*command.TimeArgs).Floor)
	}
	return Failed(command.ReasonUnsupported, "operation %q is not implemented by this agent", cmd.Op)
}

// statusReport is the result of the status command (docs/mqtt.md): lower
// camel members, times RFC 3339, durations in milliseconds.
type statusReport struct {
	Status   envelope.Status  `json:"status"`
	LastWake *lastWake        `json:"lastWake,omitempty"`
	Policy   *policySummary   `json:"policy,omitempty"`
	Holds    []heldSummary    `json:"holds,omitempty"`
	Ledger   map[string]int   `json:"ledger"`
	Halt     *haltSummary     `json:"halt,omitempty"`
	Keys     []indeterminateK `json:"indeterminate,omitempty"`
}

type lastWake struct {
	At           time.Time `json:"at"`
	Reason       string    `json:"reason"`
	Mode         string    `json:"mode"`
	WindowEnd    time.Time `json:"windowEnd,omitzero"`
	NextWake     time.Time `json:"nextWake,omitzero"`
	AwakeMs      int64     `json:"awakeMs"`
	LinkAttempts int       `json:"linkAttempts"`
	LinkError    string    `json:"linkError,omitempty"`
	// TrustedTime is how the wake established the time it judged expiry
	// by: ntp, rtc, relay, or none (TrustedTimeWhy says why); absent
	// when the wake had no link.
	TrustedTime          string `json:"trustedTime,omitempty"`
	TrustedTimeForwardMs int64  `json:"trustedTimeForwardMs,omitempty"`
	TrustedTimeWhy       string `json:"trustedTimeWhy,omitempty"`
	// TrustedTimeHeld names a source whose time the wake did not keep as
	// the floor: further than the device can bound, with no second source
	// agreeing (runtime.TimeReport.Held).
	TrustedTimeHeld string `json:"trustedTimeHeld,omitempty"`
}

type policySummary struct {
	ID       string    `json:"id"`
	IssuedAt time.Time `json:"issuedAt"`
	Expires  time.Time `json:"expires"`
	Agent    string    `json:"agent"`
}

type haltSummary struct {
	Halted bool      `json:"halted"`
	Since  time.Time `json:"since,omitzero"`
	Note   string    `json:"note,omitempty"`
}

// summarise converts the runtime's report to the status command's schema.
func summarise(r *statusReport, rep runtime.Report) {
	if w := rep.LastWake; w != nil {
		r.LastWake = &lastWake{At: w.At, Reason: w.Reason, Mode: w.Mode, WindowEnd: w.End, NextWake: w.NextWake,
			AwakeMs: w.Awake.Milliseconds(), LinkAttempts: w.LinkAttempts, LinkError: w.LinkErr}
		if t := w.Time; t != nil {
			r.LastWake.TrustedTime, r.LastWake.TrustedTimeForwardMs, r.LastWake.TrustedTimeWhy = t.Source, t.Forward.Milliseconds(), t.Untrusted
			r.LastWake.TrustedTimeHeld = t.Held
			if t.Source == "" {
				r.LastWake.TrustedTime = "none"
			}
		}
	}
	if p := rep.Policy; p != nil {
		r.Policy = &policySummary{ID: p.ID, IssuedAt: p.IssuedAt, Expires: p.Expires, Agent: p.Agent}
	}
	if h := rep.Halt; h.Halted || !h.Since.IsZero() {
		r.Halt = &haltSummary{Halted: h.Halted, Since: h.Since, Note: h.Note}
	}
}

type heldSummary struct {
	Key     string    `json:"key"`
	Purpose string    `json:"purpose"`
	Reason  string    `json:"reason"`
	HeldAt  time.Time `json:"heldAt"`
	Expires time.Time `json:"expires,omitzero"`
}

type indeterminateK struct {
	Key      string    `json:"key"`
	Action   string    `json:"action,omitempty"`
	Reserved time.Time `json:"reservedAt"`
	EffectID string    `json:"effectId,omitempty"`
}

// maxListed caps the holds and keys a status lists.
const maxListed = 50

func (c *Commands) status(p *runtime.Pipeline) Result {
	rep, err := p.Report(maxListed)
	if err != nil {
		return Failed("store", "reading the agent's state: %v", err)
	}
	r := statusReport{Status: c.Status(), Ledger: rep.Ledger}
	summarise(&r, rep)
	// The device answers: it is awake, since its connection came up.
	r.Status.State, r.Status.Name, r.Status.Device = envelope.StateAwake, c.cfg.Name, c.key.DID().String()
	r.Status.Version = version.Get().Short()
	if cl := c.Client(); cl != nil {
		r.Status.Since = cl.ConnectedAt().UTC()
	}
	for _, h := range rep.Holds[:min(len(rep.Holds), maxListed)] {
		r.Holds = append(r.Holds, heldSummary{Key: h.Action.LedgerKey(), Purpose: h.Action.Purpose,
			Reason: h.Reason, HeldAt: h.HeldAt, Expires: h.Action.Expires})
	}
	for _, e := range rep.Indeterminate {
		r.Keys = append(r.Keys, indeterminateK{Key: e.Key, Action: e.Action, Reserved: e.ReservedAt, EffectID: e.EffectID})
	}
	return OK(r)
}

// setMode changes the mode and, when windowSec or offsetSec is given, the
// hourly window (persisted like the mode: Agent.SetWindow).
func (c *Commands) setMode(args *command.SetModeArgs) Result {
	m, err := wake.ParseMode(args.Mode)
	if err != nil {
		return Failed("bad-mode", "%v", err)
	}
	if args.WindowSec != nil || args.OffsetSec != nil {
		w := c.a.Window()
		length, offset := c.a.WindowLength(), w.Offset
		if args.WindowSec != nil {
			length = time.Duration(*args.WindowSec) * time.Second
		}
		if args.OffsetSec != nil {
			offset = time.Duration(*args.OffsetSec) * time.Second
		}
		if length != c.a.WindowLength() || offset != w.Offset {
			if err := c.a.SetWindow(length, offset); err != nil {
				return Failed("store", "%v; mode unchanged", err)
			}
		}
	}
	var sched time.Time
	if args.WakeAt != nil {
		sched = args.WakeAt.UTC()
	}
	if err := c.a.SetMode(m, sched); err != nil {
		return Failed("store", "%v", err)
	}
	res := map[string]any{"mode": m, "window": c.statusWindow()}
	if !sched.IsZero() {
		res["wakeAt"] = sched
	}
	return OK(res)
}

// wakeNow: the agent hears commands only while awake, so wake-now finds
// it awake; it keeps the wake going for forSec (default: the window's
// length) from now (Agent.Extend), never shortening it. In always_on and
// session the agent has no window to extend.
func (c *Commands) wakeNow(args *command.WakeNowArgs) Result {
	d := time.Duration(args.ForSec) * time.Second
	if d == 0 {
		d = c.a.WindowLength()
	}
	end, err := c.a.Extend(c.a.Clock().Now().Add(d))
	switch {
	case errors.Is(err, runtime.ErrAsleep):
		return Failed("asleep", "no wake in progress")
	case err != nil:
		return Failed("extend", "%v", err)
	case end.IsZero():
		m, _ := c.a.Mode()
		return Result{Outcome: command.OutcomeOK, Detail: "always awake in mode " + string(m), Data: map[string]any{"awake": true}}
	}
	return OK(map[string]any{"awake": true, "until": end.UTC()})
}

// drain drains the relay's queue now (Agent.Drain) and reports that
// drain; the agent also drains whenever the relay reports a record
// queued, so this finds what such a drain left.
func (c *Commands) drain(ctx context.Context) Result {
	rep, err := c.a.Drain(ctx)
	switch {
	case errors.Is(err, runtime.ErrAsleep):
		return Failed("asleep", "%v", err)
	case err != nil:
		return Failed("drain", "%v", err)
	}
	return OK(map[string]any{"records": rep.Records, "accepted": rep.Accepted, "delivered": rep.Delivered, "held": rep.Held,
		"handOffFailed": rep.HandOffFailed, "rejected": rep.Rejected, "deferred": rep.Deferred})
}

func (c *Commands) rotateKeys(ctx context.Context) Result {
	if c.cfg.RotateKey == nil {
		return Failed(command.ReasonUnsupported, "this agent has no key rotation configured")
	}
	c.mu.Lock()
	old := c.key
	c.mu.Unlock()
	next, err := did.Generate(nil)
	if err != nil {
		return Failed("keygen", "%v", err)
	}
	h, err := signHandover(old, next.DID(), c.cfg.Name, c.a.Clock().Now())
	if err != nil {
		return Failed("handover", "%v", err)
	}
	if err := c.cfg.RotateKey(ctx, next, h); err != nil {
		return Failed("rotate", "installing the new key: %v; the old key stays in use", err)
	}
	c.mu.Lock()
	c.key = next
	cl := c.client
	c.mu.Unlock()
	if cl != nil {
		cl.SetKey(next)
		// The broker pinned the name to the old DID: the handover lets
		// the new one connect under it.
		if err := cl.SetHandover(h); err != nil {
			c.log.Warn("recording the key handover for the broker", "err", err)
		}
	}
	return OK(map[string]any{"old": old.DID(), "new": next.DID(), "handover": json.RawMessage(h)})
}

// Handover objects: the old identity announces its successor.
const (
	PurposeKeyHandover = "torpor:key-handover"
	SchemaKeyHandover  = "https://torpor.dev/schemas/key-handover/v1"
)

// signHandover signs, with the old key, a Governed Object naming the new
// DID as the device's identity from now on.
func signHandover(old *did.PrivateKey, next did.DID, device string, now time.Time) ([]byte, error) {
	o, err := governed.Sign(old, governed.Template{
		IssuedAt: now,
		Semantic: governed.Semantic{Schema: SchemaKeyHandover},
		Payload:  map[string]string{"old": old.DID().String(), "new": next.String(), "device": device},
		Purpose:  PurposeKeyHandover,
	})
	if err != nil {
		return nil, err
	}
	return o.MarshalJSON()
}

// refill makes the KeyPackage pool whole. The new public halves reach the
// relay with the next state the agent publishes, at its next wake.
func (c *Commands) refill(ctx context.Context, args *command.RefillArgs) Result {
	n, err := c.a.RefillKeyPackages(ctx, args.Count)
	switch {
	case errors.Is(err, runtime.ErrNoKeyPackages):
		return Failed(command.ReasonUnsupported, "this agent has no MLS KeyPackage pool")
	case err != nil:
		return Failed("refill", "%v", err)
	}
	return Result{Outcome: command.OutcomeOK, Detail: "the unpublished KeyPackages go to the relay with the state published at the next wake",
		Data: map[string]any{"unpublished": n}}
}

func (c *Commands) confirm(ctx context.Context, p *runtime.Pipeline, key string) Result {
	done, err := p.Confirm(ctx, key)
	if err != nil {
		return holdFailure(err)
	}
	return OK(map[string]any{"key": key, "delivered": done.Delivered, "ledger": done.Entry.State.String()})
}

func (c *Commands) deny(p *runtime.Pipeline, key string) Result {
	h, err := p.Deny(key)
	if err != nil {
		return holdFailure(err)
	}
	return OK(map[string]any{"key": key, "purpose": h.Action.Purpose, "denied": true})
}

func holdFailure(err error) Result {
	var ke *ledger.KeyError
	switch {
	case errors.Is(err, gate.ErrNoHold):
		return Failed("no-hold", "%v", err)
	case errors.Is(err, gate.ErrExpired):
		return Failed("expired", "%v", err)
	case errors.Is(err, runtime.ErrNoInstall):
		return Failed("no-install", "%v", err)
	case errors.As(err, &ke):
		return Failed("ledger-"+ke.Entry.State.String(), "%v", err)
	}
	return Failed("store", "%v", err)
}

func (c *Commands) reconcile(p *runtime.Pipeline, args *command.ReconcileArgs, by string) Result {
	res := ledger.Resolution{Happened: args.Happened, Receipt: []byte(args.Receipt), EffectID: args.EffectID, Note: args.Note}
	e, err := p.Reconcile(by, args.Key, res)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return Failed("no-key", "%v", err)
	case errors.Is(err, ledger.ErrInFlight):
		return Failed("in-flight", "%v", err)
	case errors.Is(err, ledger.ErrNotReserved):
		return Failed("not-indeterminate", "%v", err)
	case err != nil:
		return Failed("store", "%v", err)
	}
	return OK(map[string]any{"key": e.Key, "state": e.State.String(), "effectId": e.EffectID})
}

func (c *Commands) halt(p *runtime.Pipeline, args *command.NoteArgs, by string) Result {
	if err := p.Halt(by, args.Note); err != nil {
		return Failed("store", "%v", err)
	}
	c.log.Warn("halted: autonomous action stopped", "note", runtime.Recorded(args.Note, by))
	c.a.StatusChanged() // the relay's fleet shows the halt now, not at the next pulse
	return OK(map[string]any{"halted": true})
}

func (c *Commands) resume(ctx context.Context, p *runtime.Pipeline, args *command.NoteArgs, by string) Result {
	n, err := p.Resume(ctx, by, args.Note)
	if err != nil {
		return Failed("store", "%v", err)
	}
	c.log.Info("resumed", "note", runtime.Recorded(args.Note, by))
	c.a.StatusChanged()
	return OK(map[string]any{"halted": false, "ran": n})
}

// configKeys are the settings config-get reads. config-set changes mode
// and wakeAt at runtime; the others come from the configuration file and
// need a restart.
var configKeys = []string{"mode", "wakeAt", "window", "owner", "purposes", "consequential", "relay", "name", "operators", "prefix"}

func (c *Commands) configValue(key string) (any, bool) {
	a := c.a
	m, sched := a.Mode()
	switch key {
	case "mode":
		return m, true
	case "wakeAt":
		if sched.IsZero() {
			return "", true
		}
		return sched.UTC(), true
	case "window":
		return c.statusWindow(), true
	case "owner":
		if a.Config().Owner.IsZero() {
			return "", true
		}
		return a.Config().Owner, true
	case "purposes":
		return a.Config().Purposes, true
	case "consequential":
		return a.Config().Consequential, true
	case "relay":
		return a.Config().Relay.URL, true
	case "name":
		return c.cfg.Name, true
	case "operators":
		return c.cfg.Operators, true
	case "prefix":
		if c.cfg.Prefix == "" {
			return mqtt.DefaultPrefix, true
		}
		return c.cfg.Prefix, true
	}
	return nil, false
}

func (c *Commands) configGet(key string) Result {
	v, ok := c.configValue(key)
	if !ok {
		return Failed("unknown-key", "no setting %q (known: %s)", key, strings.Join(configKeys, ", "))
	}
	return OK(map[string]any{"key": key, "value": v})
}

func (c *Commands) configSet(key, value string) Result {
	switch key {
	case "mode":
		_, sched := c.a.Mode()
		m, err := wake.ParseMode(value)
		if err != nil {
			return Failed("bad-value", "%v", err)
		}
		if m != wake.Sleep {
			sched = time.Time{}
		}
		return c.setModeTo(m, sched, key)
	case "wakeAt":
		var t time.Time
		if value != "" {
			var err error
			if t, err = time.Parse(time.RFC3339, value); err != nil {
				return Failed("bad-value", "wakeAt wants an RFC 3339 time or \"\": %v", err)
			}
		}
		return c.setModeTo(wake.Sleep, t, key)
	}
	if _, ok := c.configValue(key); ok {
		return Failed("read-only", "%s comes from the agent's configuration file; change it there and restart the agent", key)
	}
	return Failed("unknown-key", "no setting %q (known: %s)", key, strings.Join(configKeys, ", "))
}

func (c *Commands) setModeTo(m wake.Mode, sched time.Time, key string) Result {
	if err := c.a.SetMode(m, sched); err != nil {
		return Failed("store", "%v", err)
	}
	v, _ := c.configValue(key)
	return OK(map[string]any{"key": key, "value": v})
}

// reboot answers first and reboots after the reply was acknowledged and
// the delay passed, so the operator learns that the command was taken.
func (c *Commands) reboot(args *command.RebootArgs) Result {
	if c.cfg.Reboot == nil {
		return Failed(command.ReasonUnsupported, "this agent has no reboot configured")
	}
	delay := time.Duration(args.DelaySec) * time.Second
	return Result{Outcome: command.OutcomeOK, Data: map[string]any{"rebootIn": delay.String()}, After: func() {
		t := c.a.Clock().NewTimer(delay)
		<-t.C()
		if err := c.cfg.Reboot(); err != nil {
			c.log.Error("reboot failed", "err", err)
		}
	}}
}

// setTime replaces the trusted time's floor with floor, when the owner
// sent it: a floor a source moved wrongly (a lying relay that was the
// device's first reading, or two sources lying together) is lowered, or a
// jump no second source can prove is made (docs/security.md, "Trusted
// time").
func (c *Commands) setTime(from did.DID, floor time.Time) Result {
	owner := c.a.Config().Owner
	if owner.IsZero() || from.String() != owner.String() {
		return Failed(command.ReasonOperatorNotAllowed, "only the device's owner may set its trusted time's floor")
	}
	if err := c.a.SetTimeFloor(floor); errors.Is(err, runtime.ErrNoTrustedTime) {
		return Failed(command.ReasonUnsupported, "%v", err)
	} else if err != nil {
		return Failed("store", "%v", err)
	}
	c.log.Warn("trusted time: the owner set the floor", "floor", floor.UTC().Format(time.RFC3339), "owner", from.String())
	return OK(map[string]any{"floor": floor.UTC().Format(time.RFC3339)})
}

// statusWindow is the hourly window in force as the MQTT status shows it.
func (c *Commands) statusWindow() envelope.Window {
	w := c.a.Window()
	return envelope.Window{Minute: w.Minute, LengthSec: int64(c.a.WindowLength() / time.Second), OffsetSec: int64(w.Offset / time.Second)}
}
