// Command updatecut is the guest program of the QEMU power-cut test of an
// agent update and of a rollback (test/qemu/updatecut_test.go). Two
// devices run side by side, each a round after another: "good" is updated
// from the packaged build N to a working build N+1, "bad" to a build that
// exits at start, which its launcher must roll back to N. A device keeps
// its key and store in /data/<device> (agent.key, agent/agent.db) for all
// its rounds; each round has its own directory, /data/<device>/r<round>,
// with its update directory and slots, so that it starts from N with
// nothing installed or downloaded. Their relay runs on the host (-relay),
// where a cut does not stop it, and holds the owner's signed targets: the
// working N+1 and the broken build, each signed as version 2.
//
// At every boot, before anything opens the files, it reads what the last
// power cut left and prints, for every round of each device so far,
//
//	CHECK {"round":0,"device":"good","runs":"2.0.0",...}
//
// where runs is the version stamp of the build the launcher
// (runtime/update/slots) starts next: the build on trial while it has starts left and its binary has
// the installed hash, else the active slot's, whose binary must hash to
// the state's SHA-256, else the packaged build's. Then every bbolt file
// on the disk is opened read-only and checked page by page (bbolt's
// Tx.Check): "STORES <n>". A state file or a store that does not open, or
// a slot binary that is not the one installed, is an ERROR line.
//
// At the first boot it puts each device's key (made on the host, which
// names the device in its rollouts) and makes its store (the packaged
// agent runs until it wrote its store marker: "PROVISIONED <device>"), so
// that the cuts, all after READY, never meet an agent's first start.
// Then it prints READY and runs each device's rounds from its first one
// not done ("ROUND <device> <n>": the host starts that round's rollout on
// the relay, offering the device its build). In a round, the round's
// update directory gets the owner's first root (meta/root.json) and the
// device runs its unit as systemd runs it (the packaged
// /bin/torpor-agent --slot-launch, hourly_wake on the relay's compressed
// clock, started again after a failure and after its exit 75). Its agent
// takes the offer itself: the TUF check over the link, the download by
// ranges within each wake's byte budget (-budget) into the round's
// update directory, resumed at the next wake and after a cut, the
// verification, the install into a slot, the exit to restart into the
// trial. "OUTCOME <device> <result> <version>" says the slots recorded
// the install's outcome. The working build rolled back because power
// cuts used up its starts (the rollback's reason names no failure of its
// own) is offered again: "RETRY <device> <round> <n>: <reason>" makes the
// host start another rollout of it for the device; one rolled back for
// another reason is an ERROR. "FINAL <device> <version>" says that the
// device's agent of the expected version (N+1 for good, N for bad)
// started after the outcome and ended a wake. Then the round's unit is
// killed, its directory gets the file "done" ("DONE <device> <n>") and
// the device's next round starts.
// Every line of the programs is prefixed with its device ("good| ",
// "bad| ").
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/torpor-dev/torpor/internal/atomicfile"
)

func main() {
	var c config
	flag.StringVar(&c.dir, "dir", "/data", "The mounted file system of the disk.")
	flag.StringVar(&c.relay, "relay", "", "The relay's URL.")
	flag.StringVar(&c.base, "base", "", "The packaged build's version (N).")
	flag.StringVar(&c.next, "next", "", "The update's version (N+1).")
	flag.StringVar(&c.goodSum, "good-sha256", "", "The SHA-256 of the working N+1 (/bin/next-good).")
	flag.StringVar(&c.badSum, "bad-sha256", "", "The SHA-256 of the broken N+1 (/bin/next-bad).")
	flag.StringVar(&c.etc, "etc", "/etc/updatecut", "The devices' keys (<device>.key) and the owner's first root (root.json).")
	flag.Float64Var(&c.scale, "time-scale", 1, "The relay's and the agents' time scale.")
	flag.StringVar(&c.epoch, "time-epoch", "", "The relay's and the agents' time epoch.")
	flag.Int64Var(&c.budget, "budget", 1<<20, "The agents' update.budgetBytes: the bytes a wake downloads.")
	flag.Parse()
	if err := run(c); err != nil {
		say("ERROR %v", err)
		os.Exit(1)
	}
	select {} // until the power is cut
}

// config is the program's flags.
type config struct {
	dir, relay, etc string
	base, next      string
	goodSum, badSum string
	scale           float64
	epoch           string
	budget          int64
}

// devices are the two devices of a round.
var devices = []string{"good", "bad"}

var sayMu sync.Mutex

// say prints one line on the console and waits until the UART has sent
// it.
func say(format string, a ...any) {
	sayMu.Lock()
	defer sayMu.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", a...)
	unix.IoctlSetInt(int(os.Stdout.Fd()), unix.TCSBRK, 1) // tcdrain
}

// run checks the disk, then runs each device's rounds from its first one
// not done.
func run(c config) error {
	first := map[string]int{}
	for _, name := range devices {
		round, err := currentRound(filepath.Join(c.dir, name))
		if err != nil {
			return err
		}
		for r := 0; r <= round; r++ {
			if err := check(c, name, r, round); err != nil {
				return fmt.Errorf("%s, round %d: %w", name, r, err)
			}
		}
		first[name] = round
	}
	n, err := checkStores(c.dir)
	if err != nil {
		return err
	}
	say("STORES %d", n)
	errs := make(chan error, len(devices))
	for _, name := range devices {
		go func() { errs <- provision(c, name) }()
	}
	for range devices {
		if err := <-errs; err != nil {
			return err
		}
	}
	say("READY")
	for _, name := range devices {
		go func() {
			for r := first[name]; ; r++ {
				if err := runRound(c, name, r); err != nil {
					say("ERROR %s, round %d: %v", name, r, err)
					return
				}
			}
		}()
	}
	return nil
}

// currentRound is the first round in dir whose directory has no done
// marker.
func currentRound(dir string) (int, error) {
	for r := 0; ; r++ {
		_, err := os.Stat(filepath.Join(roundDir(dir, r), doneMarker))
		if errors.Is(err, fs.ErrNotExist) {
			return r, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// doneMarker is the file a round's directory gets when its device ended
// in its final state.
const doneMarker = "done"

// runRound runs a round of the device name until it ends in its final
// state, stops its unit and marks the round done.
func runRound(c config, name string, round int) error {
	say("ROUND %s %d", name, round)
	d, err := newDevice(c, name, round)
	if err != nil {
		return err
	}
	if err := d.run(); err != nil {
		return err
	}
	d.stop()
	if err := atomicfile.WriteFile(filepath.Join(d.dir, doneMarker), nil, 0o600); err != nil {
		return err
	}
	say("DONE %s %d", name, round)
	return nil
}

// startPrefixed starts cmd with its output on the console, each line
// prefixed with name and handed to onLine (if not nil).
func startPrefixed(cmd *exec.Cmd, name string, onLine func(string)) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return err
	}
	go func() {
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			say("%s| %s", name, sc.Text())
			if onLine != nil {
				onLine(sc.Text())
			}
		}
		io.Copy(io.Discard, r)
	}()
	return nil
}

// agentConfig writes the device's agent.json for a round into /tmp and
// returns its path, and puts the owner's first root into the round's
// update directory (meta/root.json) as a device is provisioned: the agent
// of c's relay, its key and store in home (one
// store for all rounds), the round's slots and update directory in dir,
// waking hourly in a window of length window on the relay's compressed
// clock (c.scale, c.epoch), its
// update check on as version 1 with at most c.budget bytes downloaded a
// wake, trialStarts starts for a build on trial, the sink as its handler
// (no message is sent: the agent wants one).
func agentConfig(c config, name, home, dir string) (string, error) {
	meta := filepath.Join(dir, "update", "meta")
	if err := os.MkdirAll(meta, 0o700); err != nil {
		return "", err
	}
	if err := copyOnce(filepath.Join(c.etc, "root.json"), filepath.Join(meta, "root.json")); err != nil {
		return "", err
	}
	conf := map[string]any{
		"version": 1, "key": filepath.Join(home, "agent.key"), "dataDir": filepath.Join(home, "agent"), "relay": c.relay, "name": name,
		"board": "qemu-virt", "wake": map[string]any{"methods": []string{"timer"}}, "mode": "hourly_wake",
		"timeScale": c.scale, "timeEpoch": c.epoch, "window": map[string]any{"length": window},
		"purposes": []string{"comms:*"}, "allowPlaintext": true, "keyPackages": 2,
		"handlers": []any{map[string]any{"purpose": "comms:*", "exec": map[string]any{"path": "/bin/sink", "timeout": "30s"}}},
		"update": map[string]any{"slots": filepath.Join(dir, "slots"), "trialStarts": trialStarts[name], "trialDeadline": trialDeadline,
			"version": 1, "dir": filepath.Join(dir, "update"), "budgetBytes": c.budget},
	}
	b, err := json.Marshal(conf)
	if err != nil {
		return "", err
	}
	path := filepath.Join("/tmp", name+"-"+filepath.Base(dir)+".json")
	return path, os.WriteFile(path, b, 0o600)
}

// trialDeadline is the devices' "update.trialDeadline", on the compressed
// clock: at the test's 300 it is 36 s.
const trialDeadline = "3h"

// window is the length of the devices' hourly window, on the compressed
// clock: at the test's 300 an agent wakes every 12 s and stays awake at
// most 9 s, time for an agent under TCG to link, drain and fetch a wake's
// budget (a wake ends at its window's end, cutting a fetch short).
const window = "45m"

// trialStarts are the devices' "update.trialStarts": the broken build
// gets two, the working one the most the configuration allows, since a
// power cut during a start counts as a failed start.
var trialStarts = map[string]int{"good": 4, "bad": 2}

// restartDelay is the unit's RestartSec in the guest (the packaged unit
// waits 5 s; the test has no time to spare and nothing else to wait for).
const restartDelay = 300 * time.Millisecond
