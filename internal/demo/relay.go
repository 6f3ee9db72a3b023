package demo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/clock"
)

// startAll starts the relay, waits until it serves, then starts the demo's
// own scaled clock and the agents together.
//
// Each process's scaled clock starts when the process does, so processes
// started apart disagree by the gap times the scale. A DID Bearer token may
// be at most 60 s early at the relay but up to its 5 min lifetime late, so
// every process that signs tokens (the agents, the sender) must run behind
// the relay, never ahead: they start after it. At the default scale of 180
// they may lag it by up to 1.6 s of real time; in practice they lag it by
// its start-up, a few hundred milliseconds. An option to give every process
// one epoch would remove the lag altogether.
func (d *demo) startAll(ctx context.Context) error {
	if err := d.startRelay(ctx); err != nil {
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

// startRelay starts torpor-relay on loopback ports the kernel picks, with
// its embedded store and MQTT broker in the demo's directory, and waits
// until it serves.
func (d *demo) startRelay(ctx context.Context) error {
	dir := d.path("relay")
	args := []string{"--listen", "127.0.0.1:0", "--mqtt-listen", "127.0.0.1:0", "--data-dir", dir + "/data",
		"--per-agent-metrics", "--time-scale", strconv.FormatFloat(d.cfg.scale(), 'f', -1, 64),
		// The owner is the MQTT operator: the broker lets it command the agents.
		"--operator", d.owner.DID().String()}
	var err error
	if d.relay, err = StartProc("relay", d.bin("torpor-relay"), args, dir, dir+"/relay.log", nil); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	l, _, err := d.relay.Out().Await(wctx, 0, func(l Line) bool { return l.Msg == "torpor-relay listening" })
	if err != nil {
		return fmt.Errorf("demo: torpor-relay did not start: %w", err)
	}
	d.relayURL, d.mqttURL = l.Get("addr"), l.Get("mqtt")
	d.n.Event("relay", KindStart, "torpor-relay serving %s (A2A, device links, /metrics), embedded MQTT broker %s, store %s/data, clock ×%g",
		d.relayURL, d.mqttURL, dir, d.cfg.scale())
	d.bg.Go(func() { d.relay.Out().Follow(ctx, d.relayLine) })
	return nil
}

// relayLine narrates one line of the relay's log.
func (d *demo) relayLine(l Line) {
	a := d.byDID[l.Get("agent")]
	switch {
	case l.Level == "":
		if strings.TrimSpace(l.Raw) != "" {
			d.n.Event("relay", KindError, "%s", l.Raw)
		}
	case l.Msg == "link up" && a != nil:
		d.n.Event(a.name, KindWake, "awake: device link up (one outbound WebSocket to the relay)")
	case l.Msg == "state published" && a != nil:
		n, _ := strconv.Atoi(l.Get("keyPackages"))
		a.mu.Lock()
		first := n > 0 && !a.published
		a.published = a.published || n > 0
		a.mu.Unlock()
		if first {
			d.n.Event(a.name, KindStart, "published to the relay: mode %s, signed Agent Card, pulse, %d MLS KeyPackages", l.Get("mode"), n)
		}
	case l.Msg == "purged expired records":
		d.n.Event("relay", KindQueue, "purged %s expired record(s), never delivered", l.Get("records"))
	case l.Level == "ERROR" && l.Get("component") == "mqtt" && l.Get("error") == "key not found":
		// mochi's storage hook on a fresh data directory: not an error.
	case l.Level == "ERROR":
		d.n.Event("relay", KindError, "%s %s", l.Msg, attrs(l, "agent", "err", "error"))
	case l.Level == "WARN":
		d.warn("relay", l.Msg, attrs(l, "agent", "err", "error"))
	}
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
	depths, err := QueueDepths(ctx, d.hc, d.relayURL)
	if err != nil {
		return ""
	}
	var parts []string
	for _, a := range d.agents {
		parts = append(parts, fmt.Sprintf("%s %d", a.name, depths[a.did()]))
	}
	return strings.Join(parts, " · ")
}
