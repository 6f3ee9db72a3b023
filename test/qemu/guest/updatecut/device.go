package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/torpor-dev/torpor/internal/atomicfile"
	"github.com/torpor-dev/torpor/runtime/update/slots"
)

// device is one round of a device: its data directory, configuration,
// the version it must end on and its unit.
type device struct {
	c                config
	name, dir, conf  string
	final            string // the version it must end on
	slots            *slots.Slots
	outcome, retried string // the last outcome said, and retried

	mu       sync.Mutex
	cmd      *exec.Cmd     // the unit's launcher process
	exited   chan struct{} // closed when cmd ended
	stopping bool          // restart or stop ends cmd: do not start it again on its exit
	// running is the version of the agent that last logged its start,
	// woke whether it ended a wake since.
	running string
	woke    bool
}

// newDevice is the round's device, its directory made by agentConfig.
func newDevice(c config, name string, round int) (*device, error) {
	dir := roundDir(filepath.Join(c.dir, name), round)
	conf, err := agentConfig(c, name, filepath.Join(c.dir, name), dir)
	if err != nil {
		return nil, err
	}
	d := &device{c: c, name: name, dir: dir, conf: conf, final: c.next, slots: slots.New(filepath.Join(dir, "slots"), nil)}
	if name == "bad" {
		d.final = c.base
	}
	return d, nil
}

// copyOnce copies src to dst (atomically, synced) unless dst exists.
func copyOnce(src, dst string) error {
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(dst, b, 0o600)
}

// provision puts the device's key (made on the host, which names the
// device in its rollouts) and makes its store once, before READY, so that
// no cut lands in the agent's first start: the packaged build runs until
// it wrote its store marker (runtime's KEYFILE.store, written once the
// store was made and synced), then is stopped.
func provision(c config, name string) error {
	home := filepath.Join(c.dir, name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	key := filepath.Join(home, "agent.key")
	if _, err := os.Stat(key + ".store"); err == nil {
		return nil
	}
	if err := copyOnce(filepath.Join(c.etc, name+".key"), key); err != nil {
		return err
	}
	conf, err := agentConfig(c, name, home, roundDir(home, 0))
	if err != nil {
		return err
	}
	cmd := exec.Command("/bin/torpor-agent", "--config", conf)
	if err := startPrefixed(cmd, name, nil); err != nil {
		return err
	}
	defer cmd.Wait()
	defer cmd.Process.Signal(syscall.SIGTERM)
	for i := 0; i < 1200; i++ {
		if _, err := os.Stat(key + ".store"); err == nil {
			say("PROVISIONED %s", name)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("the agent wrote no store marker in 2 minutes")
}

// run starts the unit, whose agent takes the rollout's offer itself
// (downloads the target over its link within each wake's budget,
// verifies it, installs it into a slot and exits to restart into it),
// and waits for the install's outcome and the device's final state.
func (d *device) run() error {
	d.start()
	for {
		st, err := d.slots.Load()
		if err != nil {
			return err
		}
		if err := d.sayOutcome(st); err != nil {
			return err
		}
		if d.final == d.c.next && st.Trial == nil && st.Outcome != nil && st.Outcome.Result == slots.RolledBack {
			if err := d.retry(st.Outcome.Reason); err != nil {
				return err
			}
		}
		d.mu.Lock()
		final := d.isFinal(st) && d.running == d.final && d.woke
		d.mu.Unlock()
		if final {
			say("FINAL %s %s", d.name, d.final)
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sayOutcome prints the slots' outcome when it changed. The working
// build rolled back for a failure of its own (its reason names a start's
// failure, not only starts used up) is an error.
func (d *device) sayOutcome(st slots.State) error {
	o := st.Outcome
	if o == nil || st.Trial != nil || o.Result+" "+o.Version == d.outcome {
		return nil
	}
	d.outcome = o.Result + " " + o.Version
	say("OUTCOME %s %s %s", d.name, o.Result, o.Version)
	if d.final == d.c.next && o.Result == slots.RolledBack && strings.Contains(o.Reason, "start ") {
		return fmt.Errorf("the working build was rolled back: %s", o.Reason)
	}
	return nil
}

// isFinal says whether st is the round's final state: no trial, and the
// last outcome installed (the working build) or rolled back (the broken
// one).
func (d *device) isFinal(st slots.State) bool {
	if st.Trial != nil || st.Outcome == nil {
		return false
	}
	if d.final == d.c.next {
		return st.Outcome.Result == slots.Installed
	}
	return st.Outcome.Result == slots.RolledBack
}

// retry asks, once per rollback, for the working build to be offered
// again, when power cuts used up its trial's starts (a cut counts as a
// failed start; the rollback's reason names no failure of its own): the
// line "RETRY <device> <round> <n>" makes the host start another rollout
// of it for the device, once the packaged build, back, ended a wake (its
// signed status, reporting the rollback, was published). n counts the
// round's retries across boots (the file "retries"), so that each names a
// new rollout.
func (d *device) retry(reason string) error {
	d.mu.Lock()
	woke := d.running == d.c.base && d.woke
	d.mu.Unlock()
	if !woke || d.retried == d.outcome {
		return nil
	}
	n := 0
	if b, err := os.ReadFile(filepath.Join(d.dir, "retries")); err == nil {
		n, _ = strconv.Atoi(string(b))
	}
	n++
	if err := atomicfile.WriteFile(filepath.Join(d.dir, "retries"), []byte(strconv.Itoa(n)), 0o600); err != nil {
		return err
	}
	d.retried = d.outcome
	say("RETRY %s %s %d: %s", d.name, strings.TrimPrefix(filepath.Base(d.dir), "r"), n, reason)
	return nil
}

// onLine follows the unit's log: which version started, and whether it
// ended a wake since.
func (d *device) onLine(l string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case strings.Contains(l, `msg="torpor-agent starting"`):
		d.running, d.woke = "", false
		if _, v, ok := strings.Cut(l, " version="); ok {
			d.running, _, _ = strings.Cut(v, " ")
		}
	case strings.Contains(l, " msg=wake "):
		d.woke = true
	}
}

// start starts the unit: the packaged binary as the slots' launcher,
// started again restartDelay after it fails (Restart=on-failure, not on
// status 65: RestartPreventExitStatus).
func (d *device) start() {
	cmd := exec.Command("/bin/torpor-agent", "--slot-launch", "--config", d.conf)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // KillMode=control-group
	if err := startPrefixed(cmd, d.name, d.onLine); err != nil {
		say("ERROR %s: starting the unit: %v", d.name, err)
		return
	}
	exited := make(chan struct{})
	d.mu.Lock()
	d.cmd, d.exited = cmd, exited
	d.running, d.woke = "", false // until this start's agent says
	d.mu.Unlock()
	go func() {
		cmd.Wait()
		code := cmd.ProcessState.ExitCode()
		say("UNIT %s exit %d", d.name, code)
		d.mu.Lock()
		stopping := d.stopping
		d.mu.Unlock()
		close(exited)
		if stopping || code == 0 || code == 65 {
			return
		}
		time.Sleep(restartDelay)
		d.mu.Lock()
		again := d.cmd == cmd // nobody restarted it meanwhile
		d.mu.Unlock()
		if again {
			d.start()
		}
	}()
}

// stop kills the unit's process group (the launcher and the build it
// runs) at the end of the round.
func (d *device) stop() { d.end(syscall.SIGKILL) }

// end sends sig to the unit's process group and waits for the launcher to
// exit; the unit is not started again.
func (d *device) end(sig syscall.Signal) {
	d.mu.Lock()
	d.stopping = true
	cmd, exited := d.cmd, d.exited
	d.mu.Unlock()
	if cmd == nil {
		return
	}
	syscall.Kill(-cmd.Process.Pid, sig)
	<-exited
}
