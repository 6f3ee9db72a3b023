package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime/update/slots"
)

// device is one round of a device: its data directory, configuration,
// the build it is updated to and its unit.
type device struct {
	c                      config
	name, dir, conf, build string
	sum                    string // the build's SHA-256
	final                  string // the version it must end on
	slots                  *slots.Slots

	mu       sync.Mutex
	cmd      *exec.Cmd     // the unit's launcher process
	exited   chan struct{} // closed when cmd ended
	stopping bool          // restart or stop ends cmd: do not start it again on its exit
	// running is the version of the agent that last logged its start,
	// woke whether it ended a wake since.
	running string
	woke    bool
}

func newDevice(c config, name string, round int) (*device, error) {
	dir := roundDir(filepath.Join(c.dir, name), round)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	conf, err := agentConfig(c.relay, name, filepath.Join(c.dir, name), dir)
	if err != nil {
		return nil, err
	}
	d := &device{c: c, name: name, dir: dir, conf: conf, build: "/bin/next-" + name,
		sum: c.goodSum, final: c.next, slots: slots.New(filepath.Join(dir, "slots"), nil)}
	if name == "bad" {
		d.sum, d.final = c.badSum, c.base
	}
	return d, nil
}

// provision makes the device's key and store once, before READY, so that
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
	if _, err := os.Stat(key); errors.Is(err, fs.ErrNotExist) {
		k, err := did.Generate(rand.Reader)
		if err != nil {
			return err
		}
		if err := did.SaveKey(key, k, false); err != nil { // atomically, synced
			return err
		}
	}
	conf, err := agentConfig(c.relay, name, home, roundDir(home, 0))
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

// run starts the unit and, unless the slots hold the round's install
// already, downloads and installs the update and restarts the unit; then
// it waits for the install's outcome and the device's final state.
func (d *device) run() error {
	st, err := d.slots.Load()
	if err != nil {
		return err
	}
	d.start()
	if !d.installed(st) {
		if err := d.update(); err != nil {
			return err
		}
		d.restart()
	}
	outcome := false
	for {
		st, err := d.slots.Load()
		if err != nil {
			return err
		}
		if o := st.Outcome; !outcome && st.Trial == nil && o != nil && o.Version == d.c.next {
			say("OUTCOME %s %s %s", d.name, o.Result, o.Version)
			if d.name == "good" && o.Result == slots.RolledBack {
				if err := d.retry(o.Reason); err != nil {
					return err
				}
				continue
			}
			outcome = true
		}
		d.mu.Lock()
		final := outcome && d.running == d.final && d.woke
		d.mu.Unlock()
		if final {
			say("FINAL %s %s", d.name, d.final)
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// update downloads and installs the build, then removes the download.
func (d *device) update() error {
	path, err := d.download()
	if err != nil {
		return err
	}
	if err := d.install(path); err != nil {
		return err
	}
	say("INSTALLED %s", d.name)
	return os.Remove(path)
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

// installed says whether st holds the round's install: on trial, or with
// its outcome (for the working build, installed).
func (d *device) installed(st slots.State) bool {
	if st.Trial != nil && st.Trial.Version == d.c.next {
		return true
	}
	o := st.Outcome
	return o != nil && o.Version == d.c.next && (d.name == "bad" || o.Result == slots.Installed)
}

// retry installs the working build again after the launcher rolled it
// back, as a rollout offers it again at a later wake, when each of its
// failed starts was cut by the power (the failures record none of its own,
// reason is the rollback's): a cut counts as a failed start.
func (d *device) retry(reason string) error {
	if strings.Contains(reason, "start ") {
		return fmt.Errorf("the working build was rolled back: %s", reason)
	}
	say("RETRY %s: %s", d.name, reason)
	if err := d.update(); err != nil {
		return err
	}
	d.restart()
	return nil
}

// piece is how much of the build each append of the download writes and
// syncs (runtime/update fetches 64 KiB a frame and syncs at the end of a
// wake's budget; a smaller piece gives a cut more places to land).
const piece = 256 << 10

// download fetches the build into the update directory as runtime/update
// does: appended to part/<sha256>, resumed from its length, checked and
// renamed to verified/<sha256>. A part whose hash is wrong (a tail a cut
// tore) is dropped and fetched again, once.
func (d *device) download() (string, error) {
	up := filepath.Join(d.dir, "update")
	part, verified := filepath.Join(up, "part", d.sum), filepath.Join(up, "verified", d.sum)
	if sum(verified) == d.sum {
		return verified, nil
	}
	for _, sub := range []string{"part", "verified"} {
		if err := os.MkdirAll(filepath.Join(up, sub), 0o700); err != nil {
			return "", err
		}
	}
	for try := 0; ; try++ {
		from, err := appendFrom(part, d.build)
		if err != nil {
			return "", err
		}
		say("DOWNLOADED %s from %d", d.name, from)
		if got := sum(part); got == d.sum {
			break
		} else if try > 0 {
			return "", fmt.Errorf("download: SHA-256 %s, want %s", got, d.sum)
		}
		if err := os.Remove(part); err != nil {
			return "", err
		}
	}
	if err := os.Rename(part, verified); err != nil {
		return "", err
	}
	return verified, syncDir(filepath.Dir(verified))
}

// appendFrom appends to part what src holds beyond part's length, a
// piece at a time, each synced; it returns the length it resumed from.
func appendFrom(part, src string) (int64, error) {
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	if _, err := in.Seek(fi.Size(), io.SeekStart); err != nil {
		return 0, err
	}
	buf := make([]byte, piece)
	for {
		n, err := io.ReadFull(in, buf)
		if n > 0 {
			if _, werr := f.Write(buf[:n]); werr != nil {
				return 0, werr
			}
			if serr := f.Sync(); serr != nil {
				return 0, serr
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fi.Size(), f.Close()
		}
		if err != nil {
			return 0, err
		}
	}
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// install runs the packaged binary's "slots install" of the verified file.
func (d *device) install(path string) error {
	cmd := exec.Command("/bin/torpor-agent", "slots", "install", "--config", d.conf, "--build-version", d.c.next, path)
	if err := startPrefixed(cmd, d.name, nil); err != nil {
		return err
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("slots install: %w", err)
	}
	return nil
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

// restart stops the unit's launcher (SIGTERM, as systemctl restart) and
// starts it again.
func (d *device) restart() {
	d.end(syscall.SIGTERM)
	d.mu.Lock()
	d.stopping = false
	d.mu.Unlock()
	d.start()
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
