package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/session/sender"
	"github.com/torpor-dev/torpor/wake"
)

// The plan, in real time from the moment the agents start. At the default
// scale an hour is 20 s: the hourly agent's first window opens after 5 s
// and lasts 12 scaled minutes (4 s); its next one opens 20 s later. The
// sleeping agent's operator-scheduled wake comes 2.5 s after the first
// window opened and lasts 9 scaled minutes (3 s).
const (
	hourlyLead   = 5 * time.Second
	sleeperAfter = 2500 * time.Millisecond
	hourlyLength = 12 * time.Minute // scaled
	sleepLength  = 9 * time.Minute  // scaled
)

// run is the scenario. Errors end it early; expectations that fail are
// recorded with d.fail and the scenario goes on.
func (d *demo) run(ctx context.Context) error {
	relays := "a relay"
	if d.cfg.Cluster {
		relays = "three relays on a 3-node NATS JetStream cluster"
	}
	d.n.Printf("Torpor demo: %s, three sleeping-or-not agents and a sender, on loopback, with every clock ×%g\n"+
		"(an hour passes in %.0f s). Working directory %s; it is removed at the end.\n\n"+
		"  real   clock     who      event   what happened\n", relays, d.cfg.scale(), time.Hour.Seconds()/d.cfg.scale(), d.cfg.Dir)
	if err := d.makeKeys(ctx); err != nil {
		return err
	}
	if err := d.grant(ctx, d.agents[1]); err != nil {
		return err
	}
	if err := d.startAll(ctx); err != nil {
		return err
	}
	qctx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	d.bg.Go(func() { d.pollQueues(qctx) })
	if err := d.awaitReady(ctx); err != nil {
		return err
	}
	var err error
	if d.send, err = sender.Open(d.path("sender", "sessions.db"), d.senderKey, d.hc, d.clock); err != nil {
		return err
	}
	if err := d.firstRound(ctx); err != nil {
		return err
	}
	if err := d.delegate(ctx, d.agents[1]); err != nil {
		return err
	}
	hourly, sleeper := d.agents[0], d.agents[1]
	if err := d.awaitWakes(ctx, hourly, 2); err != nil { // boot + first window
		return err
	}
	d.confirmHeld(hourly)
	if err := d.awaitWakes(ctx, sleeper, 2); err != nil { // boot + the scheduled wake
		return err
	}
	// Sent well after the hourly window closed: right at its end, the
	// relay's clock may still be inside the window (see Config.Scale).
	if err := d.secondRound(ctx, hourly); err != nil {
		return err
	}
	if err := d.awaitWakes(ctx, hourly, 3); err != nil { // the next window: the confirmed action runs
		return err
	}
	return d.awaitConfirmations(ctx, hourly)
}

// makeKeys makes the identities: the agents' and their owner's with
// torporctl keygen, as a user would; the sender's and a stranger's in
// process.
func (d *demo) makeKeys(ctx context.Context) error {
	for _, dir := range []string{"owner", "sender"} {
		if err := os.MkdirAll(d.path(dir), 0o700); err != nil {
			return err
		}
	}
	var err error
	if d.ownerKey = d.path("owner", "owner.key"); true {
		if d.owner, err = d.keygen(ctx, d.ownerKey); err != nil {
			return err
		}
	}
	d.n.Event("owner", KindStart, "torporctl keygen: %s (owns the agents, signs MQTT commands)", short(d.owner.DID().String()))
	specs := []struct {
		name   string
		mode   wake.Mode
		length time.Duration
	}{{"hourly", wake.HourlyWake, hourlyLength}, {"sleeper", wake.Sleep, sleepLength}, {"always", wake.AlwaysOn, 0}}
	for _, s := range specs {
		a := &agent{name: s.name, mode: s.mode, length: s.length, dir: d.path("agents", s.name),
			drained: map[string]int{}, rejected: map[string]int{}}
		if err := os.MkdirAll(a.dir, 0o700); err != nil {
			return err
		}
		if a.key, err = d.keygen(ctx, a.dir+"/agent.key"); err != nil {
			return err
		}
		d.agents = append(d.agents, a)
		d.byDID[a.did()] = a
		d.n.Event(a.name, KindStart, "torporctl keygen: %s", short(a.did()))
	}
	if d.senderKey, err = did.Generate(rand.Reader); err != nil {
		return err
	}
	d.stranger, err = did.Generate(rand.Reader)
	d.n.Event("sender", KindStart, "identity %s; a stranger's identity %s for the hostile objects", short(d.senderKey.DID().String()), short(d.stranger.DID().String()))
	return err
}

// keygen runs torporctl keygen and loads the key it wrote.
func (d *demo) keygen(ctx context.Context, file string) (*did.PrivateKey, error) {
	out, err := exec.CommandContext(ctx, d.bin("torporctl"), "keygen", file).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("demo: torporctl keygen: %v: %s", err, out)
	}
	return did.LoadKey(file)
}

// plan places the hourly agent's window and the sleeping agent's wake on
// the scaled clock: the window opens at the agent's wake minute and second
// (derived from its DID) plus an offset, which the demo
// chooses so that the window opens hourlyLead from now.
func (d *demo) plan() {
	now := d.clock.Now()
	hourly, sleeper := d.agents[0], d.agents[1]
	start := now.Add(d.cfg.scaled(hourlyLead)).Truncate(time.Second)
	spread := wake.SpreadWindowFor(hourly.did())
	offset := start.Sub(start.Truncate(time.Hour)) - time.Duration(spread.Minute)*time.Minute - spread.Shift()
	hourly.window = wake.Window{Minute: spread.Minute, Second: spread.Second, Length: hourlyLength, Offset: offset}
	sleeper.sched = start.Add(d.cfg.scaled(sleeperAfter)).Truncate(time.Second)
	d.n.Event(hourly.name, KindStart, "plan: hourly_wake, wake minute %d second %d (hashes of its DID) + offset %v: windows at %s every hour, %v long",
		spread.Minute, spread.Second, offset, start.UTC().Format("15:04:05"), hourlyLength)
	d.n.Event(sleeper.name, KindStart, "plan: sleep; its operator scheduled one wake at %s (%v long)", sleeper.sched.UTC().Format("15:04:05"), sleepLength)
	d.n.Event(d.agents[2].name, KindStart, "plan: always_on: linked all the time, answers live")
}

// awaitReady waits until every agent published its state with KeyPackages
// and the two sleepers finished their boot wake (so what is sent next
// waits for their windows).
func (d *demo) awaitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for {
		var missing []string
		for _, a := range d.agents {
			a.mu.Lock()
			ok := a.published && (a.bootDone || a.mode == wake.AlwaysOn)
			a.mu.Unlock()
			if !ok {
				missing = append(missing, a.name)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return fmt.Errorf("demo: %s never published KeyPackages or never finished booting: %w", strings.Join(missing, ", "), err)
		}
	}
}

// awaitWakes waits until a has reported n wakes, or a process exited.
func (d *demo) awaitWakes(ctx context.Context, a *agent, n int) error {
	for {
		a.mu.Lock()
		got := len(a.wakes)
		a.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-a.proc.Done():
			return fmt.Errorf("demo: %s exited: %v", a.name, a.proc.Err())
		default:
		}
		for _, r := range d.relays {
			select {
			case <-r.proc.Done():
				return fmt.Errorf("demo: %s exited: %v", r.name, r.proc.Err())
			default:
			}
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return fmt.Errorf("demo: waiting for %s's wake %d: %w", a.name, n, err)
		}
	}
}

// awaitConfirmations waits (a little) for the replies to the owner's
// confirmations of a's held actions.
func (d *demo) awaitConfirmations(ctx context.Context, a *agent) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		done := true
		for _, l := range a.lettersExpecting(expectHold) {
			done = done && (!l.held || l.confirmed != "")
		}
		if done || sleepCtx(ctx, 20*time.Millisecond) != nil {
			return nil // a missing reply is reported by the summary's checks
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// errNoSession marks a failed pair-session establishment.
var errNoSession = errors.New("demo: no session")
