package conffile

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"periph.io/x/conn/v3/gpio"

	"github.com/torpor-dev/torpor/boards"
	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/internal/origin"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/health"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/runtime/sessions"
	"github.com/torpor-dev/torpor/runtime/trusted"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
	"github.com/torpor-dev/torpor/wake/board"
	"github.com/torpor-dev/torpor/wake/rtc"
)

// Built is a runtime.Config made from a File, with what must be released
// when the agent stops (MQTT connections).
type Built struct {
	Config runtime.Config
	// Commands configures the operators' commands over MQTT; nil when the
	// file names no broker. The daemon sets Logger, Reboot and RotateKey,
	// which need the running agent, and calls manage.NewCommands.
	Commands *manage.CommandsConfig
	closers  []func()
}

// Close releases the handlers' connections.
func (b *Built) Close() {
	for _, c := range b.closers {
		c()
	}
}

// Build checks f and makes the agent's configuration: the key loaded from
// its file, the handlers connected, the wake sources made, the clock scaled
// by TimeScale (0, absent, is real time; any other value outside
// [clock.MinScale, clock.MaxScale] is an error) from TimeEpoch. Every problem is
// reported, not just the first.
func (f *File) Build() (*Built, error) {
	b := &Built{}
	c := &b.Config
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(f.checkBounds())
	add(f.checkUpdate())
	add(f.buildClock(c))
	// Expiry is judged by trusted time (runtime/trusted); buildWake names
	// the board's RTC.
	// The ceiling counts elapsed time as fast as the scaled clock runs,
	// as the relay's times do.
	c.TrustedTime = &trusted.Config{Clock: c.Clock, Scale: f.TimeScale}
	add(f.buildKey(c))
	c.Store.DataDir, c.Relay.URL, c.Name = f.DataDir, f.Relay, f.Name
	add(f.buildWake(c)) // a board profile may supply the data directory
	if c.Store.DataDir == "" {
		add(errors.New("no data directory (\"dataDir\" or --data-dir)"))
	}
	if c.Relay.URL == "" {
		add(errors.New("no relay URL (\"relay\" or --relay)"))
	} else {
		add(origin.Check(`"relay" (or --relay)`, c.Relay.URL))
	}
	add(f.buildEnrolment(c))
	add(f.buildUpdate(c))
	add(f.buildSchedule(c))
	add(f.buildPolicy(c))
	add(b.buildHandlers(f))
	if f.Bounds != nil {
		c.Relay.Bounds = queuebounds.Bounds{MaxMessages: f.Bounds.MaxMessages, MaxPerPeer: f.Bounds.MaxPerPeer, MaxPeerBytes: f.Bounds.MaxPeerBytes,
			MaxBytes: f.Bounds.MaxBytes, MaxMessageSize: f.Bounds.MaxMessageSize, TTL: time.Duration(f.Bounds.TTL).Truncate(time.Second)}
	}
	add(b.buildCommands(f))
	c.Store.BatchSize, c.MLS.KeyPackageTarget = f.BatchSize, f.KeyPackages
	c.MLS.OpenMLS = func(db *bolt.DB) (drain.Sessions, runtime.KeyPackages, error) {
		s, err := session.New(session.Config{Key: c.Key, Clock: c.Clock, PoolSize: f.KeyPackages})
		if err != nil {
			return nil, nil, err
		}
		return sessions.Sessions{S: s}, sessions.KeyPackages{S: s, DB: db}, nil
	}
	if len(errs) > 0 {
		b.Close()
		return nil, problems(flatten(errs))
	}
	return b, nil
}

// buildClock sets the clock: real time, scaled by TimeScale when it is
// set, agreeing with real time at TimeEpoch (clock.NewScaledAt; absent, at
// the start).
func (f *File) buildClock(c *runtime.Config) error {
	c.Clock = clock.Real
	epoch, err := clock.ParseEpoch(f.TimeEpoch)
	if err != nil {
		return fmt.Errorf("timeEpoch (or --time-epoch): %w", err)
	}
	if f.TimeScale == 0 { // absent: real time
		return nil
	}
	if err := clock.CheckScale(f.TimeScale); err != nil {
		return fmt.Errorf("timeScale (or --time-scale): %w", err)
	}
	c.Clock, _ = clock.NewScaledAt(clock.Real, f.TimeScale, epoch)
	return nil
}

// buildKey loads the key file.
func (f *File) buildKey(c *runtime.Config) error {
	if f.Key == "" {
		return errors.New("no key file (\"key\" or --key)")
	}
	k, err := did.LoadKey(f.Key)
	c.Key, c.Store.KeyFile = k, f.Key
	var ke *did.KeyFileError
	switch {
	case errors.Is(err, did.ErrNoKey):
		return fmt.Errorf("key file %s does not exist (torporctl keygen %s makes one)", f.Key, f.Key)
	case errors.As(err, &ke):
		return fmt.Errorf("key file %s: %w", f.Key, ke.Err)
	}
	return err
}

// buildCommands reads the MQTT management channel.
func (b *Built) buildCommands(f *File) error {
	m := f.MQTT
	if m == nil || m.Broker == "" {
		return nil
	}
	cc := &manage.CommandsConfig{Broker: m.Broker, Name: m.Name, Prefix: m.Prefix, SessionExpiry: time.Duration(m.SessionExpiry)}
	var errs []error
	if u, err := url.Parse(m.Broker); err != nil || u.Host == "" {
		errs = append(errs, fmt.Errorf("mqtt.broker %q: want mqtt://HOST:PORT or mqtts://HOST:PORT", m.Broker))
	}
	for _, s := range m.Operators {
		d, err := did.Parse(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("mqtt.operators: %w", err))
			continue
		}
		cc.Operators = append(cc.Operators, d)
	}
	if len(m.Operators) == 0 {
		errs = append(errs, errors.New("mqtt.operators: at least one operator DID is required with a broker (nobody could command the device)"))
	}
	if m.PasswordFile != "" {
		pw, err := os.ReadFile(m.PasswordFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("mqtt.passwordFile: %w", err))
		}
		cc.Password = bytes.TrimSpace(pw)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	b.Commands = cc
	return nil
}

func (f *File) buildSchedule(c *runtime.Config) error {
	mode := f.Mode
	if mode == "" {
		mode = string(wake.HourlyWake)
	}
	m, err := wake.ParseMode(mode)
	if err != nil {
		return err
	}
	c.Schedule.Mode = m
	c.Schedule.WindowLength, c.Schedule.WindowOffset = time.Duration(f.Window.Length), time.Duration(f.Window.Offset)
	if f.ScheduledWake != "" {
		t, err := time.Parse(time.RFC3339, f.ScheduledWake)
		if err != nil {
			return fmt.Errorf("scheduledWake: %v", err)
		}
		c.Schedule.ScheduledWake = t
	}
	return nil
}

func (f *File) buildPolicy(c *runtime.Config) error {
	var errs []error
	var err error
	if c.Purposes, err = purpose.ParseSet(strings.Join(f.Purposes, ",")); err != nil {
		errs = append(errs, fmt.Errorf("purposes: %w", err))
	}
	if len(c.Purposes) == 0 {
		errs = append(errs, errors.New("no purposes: the agent would accept nothing (draft Section 8.3 requires an allowlist)"))
	}
	cons := f.Consequential
	if cons == nil {
		cons = []string{"action:*"}
	}
	if c.Consequential, err = purpose.ParseSet(strings.Join(cons, ",")); err != nil {
		errs = append(errs, fmt.Errorf("consequential: %w", err))
	}
	if f.Owner != "" {
		if c.Owner, err = did.Parse(f.Owner); err != nil {
			errs = append(errs, fmt.Errorf("owner: %w", err))
		}
	}
	c.AllowPlaintext, c.MaxLifetime = f.AllowPlaintext, time.Duration(f.MaxLifetime)
	if c.Notify, err = drain.ParseNotifyMode(f.Notify); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (b *Built) buildHandlers(f *File) error {
	var errs []error
	if len(f.Handlers) == 0 {
		errs = append(errs, errors.New("no handlers: accepted objects would have nowhere to go"))
	}
	for i, h := range f.Handlers {
		rt, err := b.handler(h, b.Config.Clock)
		if err != nil {
			errs = append(errs, fmt.Errorf("handler %d (%s): %w", i, h.Purpose, err))
			continue
		}
		b.Config.Routes = append(b.Config.Routes, rt)
	}
	return errors.Join(errs...)
}

func (b *Built) handler(h Handler, clk clock.Clock) (deliver.Route, error) {
	if err := purpose.CheckPattern(h.Purpose); err != nil {
		return deliver.Route{}, err
	}
	rt := deliver.Route{Pattern: h.Purpose, Name: h.Name}
	n := 0
	if h.Exec != nil {
		n++
		if h.Exec.Path == "" {
			return rt, errors.New("exec needs a path")
		}
		rt.Handler = &deliver.Exec{Path: h.Exec.Path, Args: h.Exec.Args, Env: h.Exec.Env, Dir: h.Exec.Dir,
			Timeout: time.Duration(h.Exec.Timeout), Clock: clk}
		rt.Name = or(rt.Name, "exec:"+h.Exec.Path)
	}
	if h.Unix != nil {
		n++
		if h.Unix.Socket == "" {
			return rt, errors.New("unix needs a socket")
		}
		u := deliver.NewUnix(h.Unix.Socket, h.Unix.Path, clk)
		u.Timeout = time.Duration(h.Unix.Timeout)
		rt.Handler = u
		rt.Name = or(rt.Name, "unix:"+h.Unix.Socket)
	}
	if h.MQTT != nil {
		n++
		if h.MQTT.Topic == "" {
			return rt, errors.New("mqtt needs a topic")
		}
		pub, err := deliver.NewMQTT(h.MQTT.Broker, or(h.MQTT.ClientID, "torpor-agent-"+randomSuffix(b.Config.Key)))
		if err != nil {
			return rt, err
		}
		pub.Clock = clk
		b.closers = append(b.closers, func() { pub.Close(context.Background()) })
		rt.Handler = &deliver.MQTT{Publisher: pub, Topic: h.MQTT.Topic, Clock: clk}
		rt.Name = or(rt.Name, "mqtt:"+h.MQTT.Topic)
	}
	if n != 1 {
		return rt, errors.New("exactly one of exec, unix and mqtt")
	}
	return rt, nil
}

// randomSuffix makes the default MQTT client id from the agent's DID, so
// two agents on one broker do not take over each other's session.
func randomSuffix(k *did.PrivateKey) string {
	if k == nil {
		return "unknown"
	}
	s := k.DID().String()
	return s[len(s)-8:]
}

// buildWake chooses the board profile and builds its wake source.
func (f *File) buildWake(c *runtime.Config) error {
	if err := f.checkHealth(); err != nil {
		return err
	}
	if f.Board == "" && (f.Wake == nil || timerOnly(f.Wake.Methods)) {
		// Health without a profile: uptime, a CPU zone, flash, WiFi.
		c.Status.Health = f.healthSources(c.Store.DataDir, boards.Health{}).Read
		return nil // the runtime's default: a timer on the clock, on any machine
	}
	b, bc, err := f.wakeConfig(c.Clock)
	if err != nil {
		return err
	}
	if c.Store.DataDir == "" {
		c.Store.DataDir = b.DataDir
	}
	c.Board = b.Name
	c.Status.Health = f.healthSources(c.Store.DataDir, b.Health).Read
	src, err := board.New(b, bc)
	if err != nil {
		return err
	}
	c.TrustedTime.RTC = b.RTC
	if bc.RTC.Device != "" { // an RTC HAT the configuration names
		c.TrustedTime.RTC = bc.RTC.Device
	}
	c.Schedule.Sources = []wake.Source{src}
	return nil
}

// healthSources are the board's health sources, with those the file's
// "health" names instead, on the running system.
func (f *File) healthSources(dataDir string, b boards.Health) health.Sources {
	if h := f.Health; h != nil {
		b.Supply = cmp.Or(h.Supply, b.Supply)
		b.WiFi = cmp.Or(h.WiFi, b.WiFi)
		b.ThermalZone = cmp.Or(h.ThermalZone, b.ThermalZone)
	}
	return health.Sources{Root: "/", DataDir: dataDir, Board: b}
}

// checkHealth checks the file's "health".
func (f *File) checkHealth() error {
	if f.Health == nil || f.Health.Supply == "" {
		return nil
	}
	if !filepath.IsAbs(f.Health.Supply) || !health.SupplyFile(f.Health.Supply) {
		return fmt.Errorf("health: supply %q is not an absolute path to a voltage_now, voltage_avg or hwmon in*_input file", f.Health.Supply)
	}
	return nil
}

// wakeConfig returns the board profile and what the file asks of it.
// timerOnly reports whether methods name no wake method or only the
// timer, which needs no board: it runs on the clock on any machine.
func timerOnly(methods []string) bool {
	return len(methods) == 0 || len(methods) == 1 && methods[0] == string(boards.Timer)
}

func (f *File) wakeConfig(clk clock.Clock) (boards.Board, board.Config, error) {
	b, err := f.board()
	if err != nil {
		return b, board.Config{}, err
	}
	bc := board.Config{Clock: clk}
	w := f.Wake
	if w == nil {
		return b, bc, nil
	}
	for _, m := range w.Methods {
		pm, err := boards.ParseMethod(m)
		if err != nil {
			return b, bc, err
		}
		bc.Methods = append(bc.Methods, pm)
	}
	bc.RTC.Device = w.RTC
	if w.RTCMethod != "" {
		if w.RTCMethod != string(rtc.Sysfs) && w.RTCMethod != string(rtc.Ioctl) {
			return b, bc, fmt.Errorf("wake: rtcMethod %q (want sysfs or ioctl)", w.RTCMethod)
		}
		bc.RTC.Method = rtc.Method(w.RTCMethod)
	}
	if (w.Edge == "") != (w.Pull == "") {
		return b, bc, errors.New(`wake: edge and pull go together (for a button to ground, neither; for a sensor that drives the line high, "edge": "rising", "pull": "down")`)
	}
	if bc.GPIO.Edge, err = parseEdge(w.Edge); err != nil {
		return b, bc, err
	}
	if bc.GPIO.Pull, err = parsePull(w.Pull); err != nil {
		return b, bc, err
	}
	return b, bc, nil
}

// problems is what Build found wrong, all at once, one per line.
type problems []error

func (p problems) Error() string {
	var b strings.Builder
	b.WriteString("configuration:")
	for _, e := range p {
		b.WriteString("\n  - ")
		b.WriteString(e.Error())
	}
	return b.String()
}

func (p problems) Unwrap() []error { return p }

// flatten spreads the errors errors.Join made into their parts.
func flatten(errs []error) []error {
	var out []error
	for _, e := range errs {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			out = append(out, flatten(j.Unwrap())...)
			continue
		}
		out = append(out, e)
	}
	return out
}

// parseEdge maps the configuration's edge to periph's; "" is NoEdge, which
// wake/board takes for its default.
func parseEdge(s string) (gpio.Edge, error) {
	switch s {
	case "":
		return gpio.NoEdge, nil
	case "falling":
		return gpio.FallingEdge, nil
	case "rising":
		return gpio.RisingEdge, nil
	case "both":
		return gpio.BothEdges, nil
	}
	return gpio.NoEdge, fmt.Errorf("wake: edge %q (want falling, rising or both)", s)
}

// parsePull maps the configuration's bias to periph's; "" is PullNoChange,
// which wake/board takes for its default.
func parsePull(s string) (gpio.Pull, error) {
	switch s {
	case "":
		return gpio.PullNoChange, nil
	case "up":
		return gpio.PullUp, nil
	case "down":
		return gpio.PullDown, nil
	case "float":
		return gpio.Float, nil
	}
	return gpio.PullNoChange, fmt.Errorf("wake: pull %q (want up, down or float)", s)
}

// modelPath is where board detection reads the device tree's model; ""
// means boards.ModelPath. Tests point it at a file of their own.
var modelPath = ""

// board returns the named profile, or for "auto" (and wake methods without
// a board) the detected one, falling back to the architecture's generic
// profile. A Raspberry Pi without a profile is an error rather than a
// generic board: the generic profiles wake by an RTC that a Pi 0–4 does not
// have.
func (f *File) board() (boards.Board, error) {
	if f.Board != "" && f.Board != "auto" {
		return boards.ByName(f.Board)
	}
	b, model, err := boards.Detect(modelPath)
	if err == nil {
		return b, nil
	}
	if strings.HasPrefix(model, "Raspberry Pi") {
		return boards.Board{}, fmt.Errorf("board: %q is a Raspberry Pi with no profile in this version; "+
			"set \"board\" to the closest rpi-* profile (torporctl boards lists them)", model)
	}
	g, gerr := boards.Generic(goruntime.GOARCH)
	if gerr != nil {
		return boards.Board{}, fmt.Errorf("board: %v; and %v (name one with --board)", err, gerr)
	}
	return g, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// buildEnrolment reads the owner's enrolment of this device, which the
// agent presents to its relay (wire.State.Enrolment), and checks that it
// is one: an enrolment signed by its issuer that names this device.
func (f *File) buildEnrolment(c *runtime.Config) error {
	if f.Enrolment == "" {
		return nil
	}
	b, err := os.ReadFile(f.Enrolment)
	if err != nil {
		return fmt.Errorf(`"enrolment": %w`, err)
	}
	o, err := governed.Parse(b)
	if err == nil {
		err = o.VerifySignature()
	}
	if err != nil {
		return fmt.Errorf(`"enrolment" %s: %w`, f.Enrolment, err)
	}
	var p wire.EnrolmentPayload
	if o.Governance.Purpose != wire.PurposeEnrolment || json.Unmarshal(o.Payload, &p) != nil {
		return fmt.Errorf(`"enrolment" %s: not an enrolment (purpose %q; want %q)`, f.Enrolment, o.Governance.Purpose, wire.PurposeEnrolment)
	}
	if c.Key != nil && p.Device != c.Key.DID().String() {
		return fmt.Errorf(`"enrolment" %s enrols %s, not this device (%s)`, f.Enrolment, p.Device, c.Key.DID())
	}
	c.Relay.Enrolment = b
	return nil
}
