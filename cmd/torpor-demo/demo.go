package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/session/sender"
	"github.com/torpor-dev/torpor/test/procs"
)

// DefaultScale is the default time scale: an hour passes in 20 s.
const DefaultScale = 180

// Config configures Run.
type Config struct {
	// Bin is the directory holding torpor-relay, torpor-agent and
	// torporctl. Required.
	Bin string
	// Dir is the demo's working directory; everything the demo and its
	// processes write goes there. Required; it should be empty.
	Dir string
	// Scale is the time scale given to every process (--time-scale); zero
	// means DefaultScale. The processes' scaled clocks start when each
	// process starts, so they disagree by the start-up gaps times Scale
	// (see startAll): at 180, 0.3 s apart is 54 s of scaled time, inside
	// what DID Bearer tokens allow and small beside the demo's windows.
	Scale float64
	// Timeout bounds the whole run in real time; zero means 55 s.
	Timeout time.Duration
	// Out receives the narration; nil means os.Stdout.
	Out io.Writer
	// Cluster runs the story on a fleet instead of one relay: three
	// torpor-relay processes with --store jetstream on a 3-node JetStream
	// cluster that the demo embeds (startFleet).
	Cluster bool
	// Update tells the story of one rollout instead (runUpdate): Bin
	// must also hold update/torpor-agent, the build the agent updates to.
	// Scale zero means UpdateScale.
	Update bool
}

func (c *Config) scale() float64 {
	if c.Scale == 0 {
		return DefaultScale
	}
	return c.Scale
}

// real converts a real duration into scaled time.
func (c *Config) scaled(d time.Duration) time.Duration { return time.Duration(float64(d) * c.scale()) }

// demo is one run.
type demo struct {
	cfg   Config
	n     *Narrator
	clock clock.Clock // the sender's and narrator's scaled clock
	hc    *http.Client

	relays     []*relayProc // one, or the fleet's three
	relayURL   string       // where agents and the sender go: the relay, or the fleet's balancer
	metricsURL string       // the relay whose /metrics the demo reads
	mqttURL    string
	fleet      *fleet // with Config.Cluster: the NATS servers and the balancer

	owner     *did.PrivateKey // the agents' owner and the MQTT operator
	ownerKey  string          // its key file
	senderKey *did.PrivateKey
	stranger  *did.PrivateKey
	send      *sender.Client
	ownerSend *sender.Client // the owner's pair sessions, for its policy
	principal string         // the DID of the principal that grants the sender a passport
	passport  string         // the principal's passport for the sender at the sleeping agent
	agents    []*agent
	byDID     map[string]*agent
	bg        sync.WaitGroup // followers, pollers and operator commands
	// ops is the context of operator commands (torporctl), ended first
	// when the demo stops.
	ops     context.Context
	stopOps context.CancelFunc
	mu      sync.Mutex
	// mu guards the following fields.
	failures []string
	warnings map[string]int // by who and message
}

// Run runs the demo: it starts the relay and three agents from cfg.Bin,
// sends to them, narrates what happens, stops everything and prints a
// summary. It returns an error when something expected did not happen;
// every process it started has exited when it returns.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Bin == "" || cfg.Dir == "" {
		return errors.New("demo: Config.Bin and Config.Dir are required")
	}
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 55 * time.Second
	}
	if cfg.Update && cfg.Scale == 0 {
		cfg.Scale = UpdateScale
	}
	if s := cfg.scale(); s < 1 || s > 100000 {
		return fmt.Errorf("demo: scale %v out of range [1, 100000]", s)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: taggedTransport{http.DefaultTransport}}
	d := &demo{cfg: cfg, hc: hc, byDID: map[string]*agent{}}
	d.ops, d.stopOps = context.WithCancel(ctx)
	defer d.stopOps()
	d.clock = clock.Real // replaced by the scaled clock once the relay is up
	d.n = NewNarrator(cfg.Out, d.clock)
	run := d.run
	if cfg.Update {
		run = d.runUpdate
	}
	err := run(ctx)
	d.stopAll()
	d.summary()
	if err == nil {
		err = d.failed()
	}
	if err != nil {
		d.n.Printf("\ndemo FAILED: %v\n", err)
		d.dumpLogs()
		return err
	}
	d.n.Printf("\ndemo OK in %.1f s: every event above happened as expected; nothing is left running.\n", d.n.Elapsed().Seconds())
	return nil
}

// fail records an expectation that was not met; the run goes on so that
// the summary shows everything.
func (d *demo) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.mu.Lock()
	d.failures = append(d.failures, msg)
	d.mu.Unlock()
	d.n.Event("demo", KindError, "%s", msg)
}

// warn narrates a daemon's warning the first time who logs msg, and counts
// the repeats for the summary.
func (d *demo) warn(who, msg, attrs string) {
	d.mu.Lock()
	if d.warnings == nil {
		d.warnings = map[string]int{}
	}
	if msg == "" {
		msg = "(no message)"
	}
	k := who + ": " + msg
	d.warnings[k]++
	first := d.warnings[k] == 1
	d.mu.Unlock()
	if first {
		d.n.Event(who, KindWarn, "%s %s (repeats are counted in the summary)", msg, attrs)
	}
}

func (d *demo) failed() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.failures) == 0 {
		return nil
	}
	return fmt.Errorf("%d expectation(s) not met:\n  %s", len(d.failures), strings.Join(d.failures, "\n  "))
}

func (d *demo) path(parts ...string) string {
	return filepath.Join(append([]string{d.cfg.Dir}, parts...)...)
}

func (d *demo) bin(name string) string { return filepath.Join(d.cfg.Bin, name) }

// stopAll stops the agents, then the relays (which the agents announce
// their sleep to), then the fleet's balancer and NATS servers, then the
// sinks; it waits for the followers.
func (d *demo) stopAll() {
	d.stopOps()
	var wg sync.WaitGroup
	for _, a := range d.agents {
		if a.proc != nil {
			a.rss = a.proc.PeakRSS()
			wg.Go(func() {
				if err := a.proc.Stop(10 * time.Second); err != nil {
					d.fail("%s: %v", a.name, err)
				}
			})
		}
	}
	wg.Wait()
	for _, r := range d.relays {
		r.rss = r.proc.PeakRSS()
		wg.Go(func() {
			if err := r.proc.Stop(10 * time.Second); err != nil {
				d.fail("%s: %v", r.name, err)
			}
		})
	}
	wg.Wait()
	if d.fleet != nil {
		d.fleet.close()
	}
	for _, a := range d.agents {
		if a.sink != nil {
			a.sink.Close()
		}
	}
	if d.send != nil {
		d.send.Close()
	}
	if d.ownerSend != nil {
		d.ownerSend.Close()
	}
	d.bg.Wait()
	d.n.Event("demo", KindStop, "every process stopped (SIGTERM, exit status checked)")
}

// dumpLogs prints the end of every process's log after a failure (the
// temporary directory is removed when the demo exits).
func (d *demo) dumpLogs() {
	var all []*procs.Proc
	for _, r := range d.relays {
		all = append(all, r.proc)
	}
	for _, a := range d.agents {
		all = append(all, a.proc)
	}
	for _, p := range all {
		if p == nil {
			continue
		}
		d.n.Printf("\n--- last lines of %s ---\n%s\n", p.Name, strings.Join(p.Out().Tail(25), "\n"))
	}
}
