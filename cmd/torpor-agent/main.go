// Command torpor-agent is the device daemon: it sleeps between wake
// windows, drains its relay queue on waking and validates every object
// before anything acts on it. The logic lives in package runtime; this
// command reads the configuration file and flags, builds runtime.Config
// (runtime/conffile) and runs the agent. Run "torpor-agent -h" for the
// flags and "torpor-agent help" for the operator commands (ledger, holds,
// confirm, deny, halt, resume, status).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/internal/version"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/conffile"
	"github.com/torpor-dev/torpor/runtime/manage"
	"github.com/torpor-dev/torpor/runtime/update/slots"
)

// DefaultConfig is read when --config is not given; its absence is not an
// error then (flags alone may configure the agent).
const DefaultConfig = "/etc/torpor/agent.json"

// args are the command-line flags; a flag that was set overrides the
// configuration file.
type args struct {
	config    string
	explicit  bool // --config was given: its absence is an error
	set       map[string]bool
	key       string
	dataDir   string
	relay     string
	name      string
	board     string
	mode      string
	length    time.Duration
	offset    time.Duration
	timeScale float64
	timeEpoch string
	purposes  string
	conseq    string
	owner     string
	plaintext bool
	notify    string
	handlers  []conffile.Handler
	logLevel  slog.Level
	broker    string
	mqttName  string
	prefix    string
	operators []string
	version   bool
	reinit    bool
	launch    bool
}

func newFlags(a *args, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("torpor-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&a.version, "version", false, "Print the version and exit.")
	fs.BoolVar(&a.launch, "slot-launch", false, "Run as the A/B slots' launcher (docs/updates.md).")
	fs.BoolVar(&a.reinit, "reinitialise", false, "Make a new, empty agent.db where the store marker next to the key says the device ran before and the file is missing or empty (the agent refuses otherwise). Its replay cache, command sequence numbers, ledger, halt and MLS groups start empty: senders pair again. A corrupt agent.db must be moved aside first.")
	fs.StringVar(&a.config, "config", DefaultConfig, "The JSON configuration file (see runtime/conffile). Flags that are set override it. Without --config, a missing "+DefaultConfig+" is not an error.")
	fs.StringVar(&a.key, "key", "", "The agent's private key file, made by torporctl keygen.")
	fs.StringVar(&a.dataDir, "data-dir", "", "The directory of the agent's bbolt file (agent.db).")
	fs.StringVar(&a.relay, "relay", "", "The relay's public base URL, such as https://relay.example.")
	fs.StringVar(&a.name, "name", "", "The agent's name in its Agent Card.")
	fs.StringVar(&a.board, "board", "", "The board profile (see torporctl boards), or auto to detect it from /proc/device-tree/model. It supplies the wake sources (its default method unless the configuration's wake.methods names others) and the default data directory.")
	fs.StringVar(&a.mode, "mode", "", "The reachability mode: always_on, session, hourly_wake (the default) or sleep.")
	fs.DurationVar(&a.length, "window-length", 0, "The length of the hourly wake window (default 5m).")
	fs.DurationVar(&a.offset, "window-offset", 0, "A shift of the hourly window within the hour, to spread a fleet whose DIDs share a wake minute.")
	a.timeScale = 1
	fs.Func("time-scale", "Run the agent's clock this many times faster than real time (1, the default, to 100000), for demonstrations: an hour's cycle passes in seconds.", func(s string) (err error) {
		a.timeScale, err = clock.ParseScale(s)
		return err
	})
	fs.Func("time-epoch", "With --time-scale: the real instant (RFC 3339, or Unix seconds such as 1796320800.25) at which the scaled clock equals real time, so that the agent's clock agrees with a relay given the same scale and epoch. The default is the moment the agent starts.", func(s string) error {
		_, err := clock.ParseEpoch(s)
		a.timeEpoch = s
		return err
	})
	fs.StringVar(&a.purposes, "purposes", "", "The comma-separated purposes the agent accepts, such as comms:*,action:* (draft Section 8.3).")
	fs.StringVar(&a.conseq, "consequential", "", "The comma-separated purposes that never run without the owner's confirmation or signed policy (default action:*).")
	fs.StringVar(&a.owner, "owner", "", "The owner's DID: it signs policies, confirmations, halts and resumes.")
	fs.BoolVar(&a.plaintext, "allow-plaintext", false, "Accept unencrypted Governed Objects as well as MLS-encrypted ones.")
	fs.StringVar(&a.notify, "notify", "", "How accepted objects reach the application: at-most-once (the default) or at-least-once (for handlers idempotent on object id).")
	fs.Func("handler", "A handler for a purpose pattern: PATTERN=exec:PROGRAM, PATTERN=unix:SOCKET[#PATH] or PATTERN=mqtt:mqtt://HOST:PORT/TOPIC. Repeat the flag for more; they replace the file's handlers.", func(s string) error {
		h, err := parseHandler(s)
		if err == nil {
			a.handlers = append(a.handlers, h)
		}
		return err
	})
	fs.TextVar(&a.logLevel, "log-level", slog.LevelInfo, "The least important log level printed: debug, info, warn or error.")
	fs.StringVar(&a.broker, "mqtt-broker", "", "The MQTT 5 broker URL (mqtt://HOST:PORT or mqtts://HOST:PORT) on which the agent takes operators' signed commands while it is awake. Without one there are no MQTT commands.")
	fs.StringVar(&a.mqttName, "mqtt-name", "", "The device's name on the broker: its topic level and MQTT client id. The default is the agent's DID; name devices whose keys you rotate.")
	fs.StringVar(&a.prefix, "mqtt-prefix", "", "The MQTT topic prefix (default torpor/v1).")
	fs.Func("operator", "The DID of an operator whose signed MQTT commands the agent carries out. Repeat the flag for more; they replace the file's operators.", func(s string) error {
		a.operators = append(a.operators, s)
		return nil
	})
	return fs
}

// parseHandler reads PATTERN=KIND:TARGET.
func parseHandler(s string) (conffile.Handler, error) {
	pat, target, ok := strings.Cut(s, "=")
	kind, arg, ok2 := strings.Cut(target, ":")
	if !ok || !ok2 || arg == "" {
		return conffile.Handler{}, fmt.Errorf("handler %q: want PATTERN=exec:PROGRAM, PATTERN=unix:SOCKET[#PATH] or PATTERN=mqtt:URL/TOPIC", s)
	}
	h := conffile.Handler{Purpose: pat}
	switch kind {
	case "exec":
		h.Exec = &conffile.ExecHandler{Path: arg}
	case "unix":
		sock, path, _ := strings.Cut(arg, "#")
		h.Unix = &conffile.UnixHandler{Socket: sock, Path: path}
	case "mqtt":
		rest, ok := strings.CutPrefix(arg, "//")
		host, topic, ok2 := strings.Cut(rest, "/")
		if !ok || !ok2 || topic == "" {
			return h, fmt.Errorf("handler %q: mqtt wants mqtt://HOST:PORT/TOPIC", s)
		}
		h.MQTT = &conffile.MQTTHandler{Broker: "mqtt://" + host, Topic: topic}
	default:
		return h, fmt.Errorf("handler %q: kind %q (want exec, unix or mqtt)", s, kind)
	}
	return h, nil
}

// parseArgs parses the flags and returns the remaining arguments.
func parseArgs(argv []string, stderr io.Writer) (*args, []string, error) {
	a := &args{set: map[string]bool{}}
	fs := newFlags(a, stderr)
	if err := fs.Parse(argv); err != nil {
		return nil, nil, err
	}
	fs.Visit(func(f *flag.Flag) { a.set[f.Name] = true })
	a.explicit = a.set["config"]
	return a, fs.Args(), nil
}

// file loads the configuration file (absent is fine unless --config was
// given) and applies the flags that were set.
func (a *args) file() (*conffile.File, error) {
	f, err := conffile.Load(a.config)
	switch {
	case errors.Is(err, conffile.ErrNoConfig) && !a.explicit:
		f = &conffile.File{Version: conffile.Version}
	case err != nil:
		return nil, err
	}
	for name := range a.set {
		a.override(f, name)
	}
	return f, nil
}

// override sets f's member of the flag named name from the flag's value.
func (a *args) override(f *conffile.File, name string) {
	switch name {
	case "key":
		f.Key = a.key
	case "data-dir":
		f.DataDir = a.dataDir
	case "relay":
		f.Relay = a.relay
	case "name":
		f.Name = a.name
	case "board":
		f.Board = a.board
	case "mode":
		f.Mode = a.mode
	case "window-length":
		f.Window.Length = conffile.Duration(a.length)
	case "window-offset":
		f.Window.Offset = conffile.Duration(a.offset)
	case "time-scale":
		f.TimeScale = a.timeScale
	case "time-epoch":
		f.TimeEpoch = a.timeEpoch
	case "purposes":
		f.Purposes = splitList(a.purposes)
	case "consequential":
		f.Consequential = splitList(a.conseq)
	case "owner":
		f.Owner = a.owner
	case "allow-plaintext":
		f.AllowPlaintext = a.plaintext
	case "notify":
		f.Notify = a.notify
	case "handler":
		f.Handlers = a.handlers
	case "mqtt-broker":
		mqttOf(f).Broker = a.broker
	case "mqtt-name":
		mqttOf(f).Name = a.mqttName
	case "mqtt-prefix":
		mqttOf(f).Prefix = a.prefix
	case "operator":
		mqttOf(f).Operators = a.operators
	}
}

// mqttOf returns f's MQTT member, made when absent.
func mqttOf(f *conffile.File) *conffile.MQTT {
	if f.MQTT == nil {
		f.MQTT = &conffile.MQTT{}
	}
	return f.MQTT
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(argv []string, stdout, stderr io.Writer) int {
	if len(argv) > 0 && argv[0] == "slots" {
		return slotsCommand(argv[1:], stdout, stderr)
	}
	if len(argv) > 0 && !strings.HasPrefix(argv[0], "-") {
		return operator(argv[0], argv[1:], stdout, stderr)
	}
	a, rest, err := parseArgs(argv, stderr)
	if err != nil {
		return 2
	}
	if a.version {
		fmt.Fprintln(stdout, "torpor-agent", version.Get())
		return 0
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "torpor-agent: unexpected arguments %q (operator commands come first: torpor-agent help)\n", rest)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if a.launch {
		if code, here := launch(ctx, a, argv, stderr); !here {
			return code
		}
	}
	return exitCode(daemon(ctx, a, stderr), stderr)
}

// daemon runs the agent until ctx ends.
func daemon(ctx context.Context, a *args, stderr io.Writer) error {
	f, err := a.file()
	if err != nil {
		return err
	}
	b, err := f.Build()
	if err != nil {
		return err
	}
	defer b.Close()
	log, err := a.logger(f, stderr)
	if err != nil {
		return err
	}
	log = debugCPU(log, &b.Config)
	b.Config.Logger = log
	b.Config.Store.Reinitialise = a.reinit
	var agent *runtime.Agent
	trial(f, &b.Config, log, func() { agent.TrialEnded() }) // agent is set below
	updates(f, &b.Config, a.launch, log)
	agent, err = runtime.New(b.Config)
	if err != nil {
		return err
	}
	attrs := []any{"version", version.Get().Version, "slot", os.Getenv(slots.EnvSlot), "did", b.Config.Key.DID().String(), "relay", b.Config.Relay.URL, "mode", b.Config.Schedule.Mode, "notify", b.Config.Notify.String()}
	if b.Commands != nil {
		cmds, err := commands(agent, b, log)
		if err != nil {
			return err
		}
		agent.SetManagement(cmds) // Run ends by closing it: status offline
		attrs = append(attrs, "mqttBroker", b.Commands.Broker, "mqttName", cmds.Name())
	}
	log.Info("torpor-agent starting", attrs...)
	err = agent.Run(ctx)
	if err == nil {
		// A stop an operator asked for (SIGTERM, Ctrl-C) is said, so that
		// a journal that ends shows why it ended.
		log.Info("torpor-agent stopped", "reason", context.Cause(ctx))
	}
	return err
}

// logger makes the daemon's logger at the level the flag or file asks.
func (a *args) logger(f *conffile.File, stderr io.Writer) (*slog.Logger, error) {
	level := a.logLevel
	if f.Log != nil && f.Log.Level != "" && !a.set["log-level"] {
		if err := level.UnmarshalText([]byte(f.Log.Level)); err != nil {
			return nil, fmt.Errorf("log level: %w", err)
		}
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})), nil
}

// commands makes the operators' MQTT commands of agent. reboot and
// rotate-keys restart the agent: Run returns runtime.ErrRestart, and the
// process exits with ExitRestart for its service manager to start it
// again (under the new key, after a rotation).
func commands(agent *runtime.Agent, b *conffile.Built, log *slog.Logger) (*manage.Commands, error) {
	cc := *b.Commands
	cc.Logger = log
	cc.Reboot = func() error {
		agent.Restart("reboot command")
		return nil
	}
	cc.RotateKey = agent.RotateKey
	return manage.NewCommands(agent, cc)
}

// ExitRestart is the exit status after a restart the agent asked for (the
// reboot command, a key rotation): EX_TEMPFAIL of sysexits.h. The systemd
// unit's Restart=on-failure starts the agent again after RestartSec; a
// supervisor that restarts only on failure must treat it as one.
const ExitRestart = 75

// ExitStore is the exit status when the agent refuses its store
// (runtime.ErrStoreRefused: corrupt, or lost after the device ran before):
// EX_DATAERR of sysexits.h. The systemd unit lists it in
// RestartPreventExitStatus: restarting cannot fix it, an operator must.
const ExitStore = 65

// exitCode reports err and returns the process's exit status.
func exitCode(err error, stderr io.Writer) int {
	switch {
	case errors.Is(err, runtime.ErrRestart):
		fmt.Fprintf(stderr, "torpor-agent: stopped to restart (exit status %d)\n", ExitRestart)
		return ExitRestart
	case errors.Is(err, runtime.ErrStoreRefused):
		fmt.Fprintln(stderr, "torpor-agent:", err)
		fmt.Fprintf(stderr, "torpor-agent: exit status %d: not restarting until an operator repaired the store\n", ExitStore)
		return ExitStore
	case err != nil:
		fmt.Fprintln(stderr, "torpor-agent:", err)
		return 1
	}
	return 0
}
