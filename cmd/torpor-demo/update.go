package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/procs"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// UpdateScale is the time scale of the update story when Config.Scale is
// zero: an hour in 6 s, so that the always_on agent's hourly pulse, which
// brings it the rollout's offer, comes within seconds.
const UpdateScale = 600

// updateDemo is the state of the update story (Config.Update).
type updateDemo struct {
	owner, target, sum, agentDir string
	unit                         *procs.Proc // the unit's current start
	stopping                     bool        // stopUnit stopped it: no restart
	done                         chan struct{}
}

// runUpdate tells the story of one rollout (TORPOR_DEMO_UPDATE=1 make
// demo; docs/updates.md): the owner signs build 2 of the agent with its
// TUF keys and publishes it to the relay; an always_on agent of build 1,
// started as the systemd unit starts it (--slot-launch), verifies it and
// installs nothing; the operator starts a rollout; the agent is offered
// the build, installs it into an A/B slot, restarts for its trial boot,
// proves itself, and the rollout counts it installed.
func (d *demo) runUpdate(ctx context.Context) error {
	d.n.Printf("Torpor update demo: a relay, an agent of build 1 under the slot launcher, the owner's build 2\n"+
		"rolled out to it, on loopback, with every clock ×%g (an hour passes in %.0f s). Working directory %s.\n\n"+
		"  real   clock     who      event   what happened\n", d.cfg.scale(), time.Hour.Seconds()/d.cfg.scale(), d.cfg.Dir)
	u := &updateDemo{owner: d.path("owner", "tuf"), agentDir: d.path("agent"), done: make(chan struct{}),
		target: "torpor-agent/2/linux-" + goruntime.GOARCH}
	if err := d.updateRelay(ctx); err != nil {
		return err
	}
	if err := d.publish(ctx, u); err != nil {
		return err
	}
	if err := d.updateAgent(ctx, u); err != nil {
		return err
	}
	defer d.stopUnit(u)
	if _, err := d.awaitUnit(ctx, u, func(l procs.Line) bool { return l.Msg == "update check" && l.Get("rollout") == "" }); err != nil {
		return err
	}
	out, err := d.ctl(ctx, "update", "rollout", "start", "r1", "--relay", d.relayURL, "--key", d.ownerKey, "--time-scale", d.scaleArg(),
		"--target", u.target, "--version", "2", "--sha256", u.sum, "--waves", "100")
	if err != nil {
		return err
	}
	d.n.Event("operator", KindStart, "torporctl update rollout start r1: %s", firstLine(out))
	if _, err := d.awaitUnit(ctx, u, func(l procs.Line) bool { return l.Msg == "update installed" }); err != nil {
		return err
	}
	return d.awaitRollout(ctx)
}

// updateRelay makes the owner's key (the relay's operator) and the
// relay's two online TUF keys, and starts the relay hosting the update
// repository.
func (d *demo) updateRelay(ctx context.Context) error {
	if err := os.MkdirAll(d.path("owner"), 0o700); err != nil {
		return err
	}
	var err error
	d.ownerKey = d.path("owner", "owner.key")
	if d.owner, err = d.keygen(ctx, d.ownerKey); err != nil {
		return err
	}
	snap, ts := d.path("owner", "relay-snapshot.key"), d.path("owner", "relay-timestamp.key")
	for _, f := range []string{snap, ts} {
		if _, err := d.keygen(ctx, f); err != nil {
			return err
		}
	}
	r, err := d.startRelay(ctx, "relay", "--update-snapshot-key", snap, "--update-timestamp-key", ts, "--admission", "open")
	if r != nil {
		d.relays = []*relayProc{r}
	}
	if err != nil {
		return err
	}
	d.relayURL = r.addr
	if d.clock, err = clock.NewScaled(nil, d.cfg.scale()); err != nil {
		return err
	}
	d.n.SetClock(d.clock)
	d.n.Event("relay", KindStart, "torpor-relay serving %s, hosting the update repository (its snapshot and timestamp keys online), rollouts in %s/data",
		r.addr, d.path("relay"))
	return nil
}

// publish runs the owner's key ceremony, signs build 2 (gzip) and
// publishes it, and reads the target's SHA-256 from the signed targets.
func (d *demo) publish(ctx context.Context, u *updateDemo) error {
	didOf := func(f string) (string, error) {
		k, err := did.LoadKey(f)
		if err != nil {
			return "", err
		}
		return k.DID().String(), nil
	}
	snap, err := didOf(d.path("owner", "relay-snapshot.key"))
	ts, err2 := didOf(d.path("owner", "relay-timestamp.key"))
	if err = errors.Join(err, err2); err != nil {
		return err
	}
	steps := [][]string{
		{"update", "keys", "init", "--dir", u.owner, "--relay-snapshot", snap, "--relay-timestamp", ts},
		{"update", "sign-target", "--dir", u.owner, "--name", u.target, "--version", "2", "--goarch", goruntime.GOARCH, "--goarm", "",
			"--gzip", d.bin(filepath.Join("update", "torpor-agent"))},
		{"update", "publish", "--dir", u.owner, "--relay", d.relayURL, "--key", d.ownerKey, "--root", "1", "--time-scale", d.scaleArg()},
	}
	for _, s := range steps {
		if _, err := d.ctl(ctx, s...); err != nil {
			return err
		}
	}
	var targets struct {
		Signed struct {
			Targets map[string]struct {
				Length int64             `json:"length"`
				Hashes map[string]string `json:"hashes"`
			} `json:"targets"`
		} `json:"signed"`
	}
	b, err := os.ReadFile(filepath.Join(u.owner, "targets.json"))
	if err == nil {
		err = json.Unmarshal(b, &targets)
	}
	t := targets.Signed.Targets[u.target]
	if u.sum = t.Hashes["sha256"]; err != nil || u.sum == "" {
		return fmt.Errorf("demo: the signed targets name no SHA-256 of %s: %v", u.target, err)
	}
	d.n.Event("owner", KindStart, "torporctl update keys init, sign-target, publish: build 2.0.0 as TUF target %s, version 2, %d bytes gzip, sha256 %s…",
		u.target, t.Length, u.sum[:12])
	return nil
}

// updateAgent provisions the agent (its key, the owner's root, an
// "update" configuration at version 1) and starts its unit.
func (d *demo) updateAgent(ctx context.Context, u *updateDemo) error {
	meta := filepath.Join(u.agentDir, "update", "meta")
	if err := os.MkdirAll(meta, 0o700); err != nil {
		return err
	}
	if _, err := d.keygen(ctx, filepath.Join(u.agentDir, "agent.key")); err != nil {
		return err
	}
	root, err := os.ReadFile(filepath.Join(u.owner, "root.json"))
	if err == nil {
		err = os.WriteFile(filepath.Join(meta, "root.json"), root, 0o600)
	}
	conf, _ := json.Marshal(map[string]any{"version": 1, "update": map[string]any{"version": 1, "budgetBytes": 64 << 20,
		"trialStarts": 2, "trialDeadline": "20s"}})
	if err == nil {
		err = os.WriteFile(filepath.Join(u.agentDir, "agent.json"), conf, 0o600)
	}
	if err != nil {
		return err
	}
	go d.unitLoop(ctx, u)
	return nil
}

// unitLoop starts the agent as the systemd unit does (torpor-agent
// --slot-launch, Restart=on-failure) until ctx ends.
func (d *demo) unitLoop(ctx context.Context, u *updateDemo) {
	defer close(u.done)
	args := []string{"--slot-launch", "--config", filepath.Join(u.agentDir, "agent.json"), "--key", filepath.Join(u.agentDir, "agent.key"),
		"--data-dir", u.agentDir, "--relay", d.relayURL, "--mode", "always_on", "--name", "device", "--purposes", "comms:*",
		"--handler", "*=exec:/bin/true", "--time-scale", d.scaleArg()}
	for n := 1; ctx.Err() == nil && n <= 6; n++ {
		p, err := procs.StartProc("agent", d.bin("torpor-agent"), args, u.agentDir, fmt.Sprintf("%s/agent-%d.log", u.agentDir, n), nil)
		if err != nil {
			d.fail("starting the agent: %v", err)
			return
		}
		d.mu.Lock()
		u.unit = p
		d.mu.Unlock()
		go p.Out().Follow(ctx, func(l procs.Line) { d.updateLine(l) })
		select {
		case <-p.Done():
		case <-ctx.Done():
			return
		}
		d.mu.Lock()
		stopping := u.stopping
		d.mu.Unlock()
		var ee *exec.ExitError
		if stopping || !errors.As(p.Err(), &ee) {
			return // a clean stop
		}
		d.n.Event("unit", KindStop, "torpor-agent exited with status %d: Restart=on-failure starts it again", ee.ExitCode())
	}
}

// updateLine narrates one line of the agent's log.
func (d *demo) updateLine(l procs.Line) {
	switch l.Msg {
	case "torpor-agent starting":
		slot := l.Get("slot")
		if slot == "" {
			slot = "none: the packaged build"
		}
		d.n.Event("agent", KindStart, "torpor-agent %s starting (slot %s)", l.Get("version"), slot)
	case "update check":
		what := strings.TrimSpace(l.Get("outcome") + " " + l.Get("target") + " " + l.Get("reason"))
		switch r := l.Get("rollout"); {
		case r != "":
			what += ", offered by rollout " + r
		case l.Get("outcome") == "verified":
			what += ", offered by no rollout: kept, not installed"
		}
		d.n.Event("agent", KindDrain, "update check: %s (%s bytes fetched)", what, l.Get("bytes"))
	case "update put on trial":
		d.n.Event("agent", KindRun, "installed %s (version %s) into the slot not running, on trial; restarting", l.Get("target"), l.Get("version"))
	case "update on trial":
		d.n.Event("launcher", KindStart, "slot %s on trial: version %s, proof due within %s", l.Get("slot"), l.Get("version"), l.Get("deadline"))
	case "update installed":
		d.n.Event("agent", KindConfirm, "trial passed (store opened, linked, drained): version %s from %s is the active slot %s",
			l.Get("version"), l.Get("from"), l.Get("slot"))
	case "update rolled back":
		d.fail("the update rolled back: %s", l.Get("reason"))
	case "restarting":
		// The restart the install asked for (logged as a warning, as
		// every restart is): the story's, not a warning.
		d.n.Event("agent", KindStop, "restarting: %s; the wake ended, its drain acknowledged, the store closed", l.Get("why"))
		return
	}
	if l.Level == "WARN" || l.Level == "ERROR" {
		d.warn("agent", l.Msg, attrs(l, "err", "reason", "why"))
	}
}

// awaitUnit waits until the agent's current start logs a line match takes.
func (d *demo) awaitUnit(ctx context.Context, u *updateDemo, match func(procs.Line) bool) (procs.Line, error) {
	for {
		d.mu.Lock()
		p := u.unit
		d.mu.Unlock()
		if p == nil {
			if err := clock.Sleep(ctx, clock.Real, 50*time.Millisecond); err != nil {
				return procs.Line{}, err
			}
			continue
		}
		wctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-p.Done():
			case <-wctx.Done():
			}
			cancel()
		}()
		l, _, err := p.Out().Await(wctx, 0, match)
		cancel()
		if err == nil || ctx.Err() != nil {
			return l, err
		}
		if err := clock.Sleep(ctx, clock.Real, 50*time.Millisecond); err != nil { // the next start
			return procs.Line{}, err
		}
		d.mu.Lock()
		if u.unit == p {
			u.unit = nil
		}
		d.mu.Unlock()
	}
}

// awaitRollout polls the rollout's status until it counts the device
// installed, and narrates it.
func (d *demo) awaitRollout(ctx context.Context) error {
	for {
		out, err := d.ctl(ctx, "update", "rollout", "--json", "status", "r1", "--relay", d.relayURL, "--key", d.ownerKey, "--time-scale", d.scaleArg())
		if err != nil {
			return err
		}
		var r operatorapi.Rollout
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			return fmt.Errorf("demo: rollout status: %v", err)
		}
		if r.Counts.Installed == 1 {
			d.n.Event("operator", KindQueue, "torporctl update rollout status r1: %s, %d device(s): %d installed, %d rolled back, %d refused, %d pending",
				r.State, r.Counts.Devices, r.Counts.Installed, r.Counts.RolledBack, r.Counts.Refused, r.Counts.Pending)
			return nil
		}
		if err := clock.Sleep(ctx, clock.Real, 200*time.Millisecond); err != nil {
			return fmt.Errorf("demo: the rollout did not count the device installed: %s", out)
		}
	}
}

// stopUnit stops the agent's current start and the unit loop.
func (d *demo) stopUnit(u *updateDemo) {
	d.mu.Lock()
	p := u.unit
	u.stopping = true
	d.mu.Unlock()
	if p != nil {
		if err := p.Stop(10 * time.Second); err != nil {
			d.fail("agent: %v", err)
		}
	}
	<-u.done
}

// ctl runs torporctl and returns its output.
func (d *demo) ctl(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, d.bin("torporctl"), args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("demo: torporctl %s: %v: %s", strings.Join(args[:min(3, len(args))], " "), err, out)
	}
	return string(out), nil
}

func (d *demo) scaleArg() string { return strconv.FormatFloat(d.cfg.scale(), 'f', -1, 64) }

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
