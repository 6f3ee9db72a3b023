package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/test/procs"
)

// startAll starts the relay (or, with Config.Cluster, the fleet: see
// startFleet), waits until it serves, then starts the demo's own scaled
// clock and the agents together.
//
// Each process's scaled clock starts when the process does, so processes
// started apart disagree by the gap times the scale. A DID Bearer token may
// be at most 60 s early at the relay but up to its 5 min lifetime late, so
// every process that signs tokens (the agents, the sender) must run behind
// the relays, never ahead: they start after them. At the default scale of
// 180 they may lag the first relay by up to 1.6 s of real time; in practice
// they lag it by its start-up (and, in a fleet, the others'), a few hundred
// milliseconds each. An option to give every process one epoch would
// remove the lag altogether.
func (d *demo) startAll(ctx context.Context) error {
	if d.cfg.Cluster {
		if err := d.startFleet(ctx); err != nil {
			return err
		}
	} else if err := d.startSingle(ctx); err != nil {
		return err
	}
	var err error
	if d.clock, err = clock.NewScaled(nil, d.cfg.scale()); err != nil {
		return err
	}
	d.n.SetClock(d.clock)
	d.plan()
	for _, a := range d.agents {
		if err := d.startAgent(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// relayProc is one torpor-relay the demo runs.
type relayProc struct {
	name       string // "relay", or relay1… in a fleet
	proc       *procs.Proc
	addr, mqtt string // from its "torpor-relay listening" line
	rss        int64  // peak resident set size, read before stopping it
}

// startSingle starts torpor-relay on loopback ports the kernel picks, with
// its embedded store and MQTT broker in the demo's directory, and waits
// until it serves.
func (d *demo) startSingle(ctx context.Context) error {
	r, err := d.startRelay(ctx, "relay", "--mqtt-listen", "127.0.0.1:0")
	if r != nil {
		d.relays = []*relayProc{r} // stopped by stopAll, also after an error
	}
	if err != nil {
		return err
	}
	d.relayURL, d.metricsURL, d.mqttURL = r.addr, r.addr, r.mqtt
	d.n.Event("relay", KindStart, "torpor-relay serving %s (A2A, device links, /metrics), embedded MQTT broker %s, store %s/data, clock ×%g",
		r.addr, r.mqtt, d.path("relay"), d.cfg.scale())
	d.bg.Go(func() { r.proc.Out().Follow(ctx, func(l procs.Line) { d.relayLine(r, l) }) })
	return nil
}

// startRelay starts one torpor-relay named name (its directory too) with
// the common arguments and extra, and waits until it serves. The caller
// follows its log.
func (d *demo) startRelay(ctx context.Context, name string, extra ...string) (*relayProc, error) {
	dir := d.path(name)
	// The bbolt store makes data itself; with --store jetstream only the
	// MQTT broker's store goes there.
	if err := os.MkdirAll(dir+"/data", 0o700); err != nil {
		return nil, err
	}
	args := append([]string{"--listen", "127.0.0.1:0", "--data-dir", dir + "/data",
		"--per-agent-metrics", "--time-scale", strconv.FormatFloat(d.cfg.scale(), 'f', -1, 64),
		// The owner is the MQTT operator: the embedded broker lets it
		// command the agents.
		"--operator", d.owner.DID().String()}, extra...)
	// The demo's agents are vetted: without --allow-agent a new device
	// is on probation (5 messages a sender) until an operator admits it.
	for _, a := range d.agents {
		args = append(args, "--allow-agent", a.did())
	}
	p, err := procs.StartProc(name, d.bin("torpor-relay"), args, dir, dir+"/relay.log", nil)
	if err != nil {
		return nil, err
	}
	r := &relayProc{name: name, proc: p}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	l, _, err := p.Out().Await(wctx, 0, func(l procs.Line) bool { return l.Msg == "torpor-relay listening" })
	if err != nil {
		return r, fmt.Errorf("demo: %s (torpor-relay) did not start: %w", name, err)
	}
	r.addr, r.mqtt = l.Get("addr"), l.Get("mqtt")
	return r, nil
}

// relayLine narrates one line of relay r's log.
func (d *demo) relayLine(r *relayProc, l procs.Line) {
	a := d.byDID[l.Get("agent")]
	switch {
	case l.Level == "":
		if strings.TrimSpace(l.Raw) != "" {
			d.n.Event(r.name, KindError, "%s", l.Raw)
		}
	case l.Msg == "link up" && a != nil:
		a.mu.Lock()
		a.linkedOn = r.name
		a.mu.Unlock()
		if d.cfg.Cluster {
			d.n.Event(a.name, KindWake, "awake: device link up on %s (one outbound WebSocket, through the fleet's balancer)", r.name)
			return
		}
		d.n.Event(a.name, KindWake, "awake: device link up (one outbound WebSocket to the relay)")
	case l.Msg == "state published" && a != nil:
		n, _ := strconv.Atoi(l.Get("keyPackages"))
		a.mu.Lock()
		first := n > 0 && !a.published
		a.published = a.published || n > 0
		a.mu.Unlock()
		if first {
			d.n.Event(a.name, KindStart, "published to the relay%s: mode %s, signed Agent Card, pulse, %d MLS KeyPackages", d.on(r), l.Get("mode"), n)
		}
	case l.Msg == "purged expired records":
		d.n.Event(r.name, KindQueue, "purged %s expired record(s), never delivered", l.Get("records"))
	case l.Level == "ERROR" && l.Get("component") == "mqtt" && l.Get("error") == "key not found":
		// mochi's storage hook on a fresh data directory: not an error.
	case l.Level == "ERROR":
		d.n.Event(r.name, KindError, "%s %s", l.Msg, attrs(l, "agent", "err", "error"))
	case l.Level == "WARN":
		d.warn(r.name, l.Msg, attrs(l, "agent", "err", "error"))
	}
}

// on names relay r in a fleet (" (relay2)"); nothing for the one relay.
func (d *demo) on(r *relayProc) string {
	if !d.cfg.Cluster {
		return ""
	}
	return " (" + r.name + ")"
}

// pollQueues prints the relay's per-agent queue depths whenever they
// change, read from /metrics every 100 ms until ctx ends.
func (d *demo) pollQueues(ctx context.Context) {
	last := ""
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if s := d.queueLine(ctx); s != "" && s != last {
			d.n.Event("relay", KindQueue, "queue depth (from /metrics): %s", s)
			last = s
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// queueLine renders the depths as "hourly 8 · sleeper 3 · always 0".
func (d *demo) queueLine(ctx context.Context) string {
	depths, err := procs.QueueDepths(ctx, d.hc, d.metricsURL)
	if err != nil {
		return ""
	}
	var parts []string
	for _, a := range d.agents {
		parts = append(parts, fmt.Sprintf("%s %d", a.name, depths[a.did()]))
	}
	return strings.Join(parts, " · ")
}
