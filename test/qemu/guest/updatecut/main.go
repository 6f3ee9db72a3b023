// Command updatecut is the guest program of the QEMU power-cut test of an
// agent update and of a rollback (test/qemu/updatecut_test.go). Two
// devices run side by side, each a round after another: "good" is updated
// from the packaged build N to a working build N+1, "bad" to a build that
// exits at start, which its launcher must roll back to N. A device keeps
// its key and store in /data/<device> (agent.key, agent/agent.db) for all
// its rounds; each round has its own directory, /data/<device>/r<round>,
// with its update directory and slots, so that it starts from N with
// nothing installed. Their relay runs on the host (-relay), where a cut
// does not stop it.
//
// At every boot, before anything opens the files, it reads what the last
// power cut left and prints, for every round of each device so far,
//
//	CHECK {"round":0,"device":"good","runs":"2.0.0",...}
//
// where runs is the version the launcher (runtime/update/slots) starts
// next: the build on trial while it has starts left and its binary has
// the installed hash, else the active slot's, whose binary must hash to
// the state's SHA-256, else the packaged build's. Then every bbolt file
// on the disk is opened read-only and checked page by page (bbolt's
// Tx.Check): "STORES <n>". A state file or a store that does not open, or
// a slot binary that is not the one installed, is an ERROR line.
//
// At the first boot it makes each device's key and store (the packaged
// agent runs until it wrote its store marker: "PROVISIONED <device>"), so
// that the cuts, all after READY, never meet an agent's first start.
// Then it prints READY and runs each device's rounds from its first one
// not done ("ROUND <device> <n>"). In a round, the device runs its unit as
// systemd runs it (the packaged /bin/torpor-agent --slot-launch, started
// again after a failure) and, unless its slots hold the round's install
// already, the update: the new build is downloaded into the update
// directory as runtime/update fetches a target (appended to part/<sha256>
// in 256 KiB pieces, each synced, resumed from its length at the next
// boot, its SHA-256 checked, renamed to verified/<sha256>), installed with
// "torpor-agent slots install" (the real binary) and the unit restarted.
// "OUTCOME <device> <result> <version>" says the slots recorded the
// install's outcome. The working build rolled back because power cuts
// used up its starts (the rollback's reason names no failure of its own)
// is installed again ("RETRY <device>: <reason>"), as a rollout offers it
// again; one rolled back for another reason is an ERROR. "FINAL <device> <version>" that the device's agent of
// the expected version (N+1 for good, N for bad) started after it and
// ended a wake. Then the round's unit is killed, its directory gets the
// file "done" ("DONE <device> <n>") and the device's next round starts.
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
	flag.Parse()
	if err := run(c); err != nil {
		say("ERROR %v", err)
		os.Exit(1)
	}
	select {} // until the power is cut
}

// config is the program's flags.
type config struct {
	dir, relay      string
	base, next      string
	goodSum, badSum string
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
// returns its path: the agent of relay, its key and store in home (one
// store for all rounds), the round's slots in dir, sleeping between timer
// wakes (the boot wake links and drains: the proof of a build on trial),
// trialStarts starts of a minute each for a build on trial, the sink as
// its handler (no message is sent: the agent wants one).
func agentConfig(relay, name, home, dir string) (string, error) {
	c := map[string]any{
		"version": 1, "key": filepath.Join(home, "agent.key"), "dataDir": filepath.Join(home, "agent"), "relay": relay, "name": name,
		"board": "qemu-virt", "wake": map[string]any{"methods": []string{"timer"}}, "mode": "sleep",
		"purposes": []string{"comms:*"}, "allowPlaintext": true, "keyPackages": 2,
		"handlers": []any{map[string]any{"purpose": "comms:*", "exec": map[string]any{"path": "/bin/sink", "timeout": "30s"}}},
		"update":   map[string]any{"slots": filepath.Join(dir, "slots"), "trialStarts": trialStarts[name], "trialDeadline": "60s"},
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	path := filepath.Join("/tmp", name+"-"+filepath.Base(dir)+".json")
	return path, os.WriteFile(path, b, 0o600)
}

// trialStarts are the devices' "update.trialStarts": the broken build
// gets two, the working one the most the configuration allows, since a
// power cut during a start counts as a failed start.
var trialStarts = map[string]int{"good": 4, "bad": 2}

// restartDelay is the unit's RestartSec in the guest (the packaged unit
// waits 5 s; the test has no time to spare and nothing else to wait for).
const restartDelay = 300 * time.Millisecond
