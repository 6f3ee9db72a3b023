//go:build integration

package qemu

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/test/qemu/vm"
)

// The versions TestUpdatePowerCut stamps into its two builds of
// torpor-agent: the packaged one (the launcher) and the update.
const (
	cutBase = "1.0.0"
	cutNext = "2.0.0"
)

// updateCuts is how many power cuts TestUpdatePowerCut makes in each
// scenario (the update and the rollback).
const updateCuts = 20

// updateCutWindow bounds the moment of a cut after READY on a guest as
// fast as the reference (refToReady): a round of the update (download
// over several wakes, install, restart, trial, confirm) takes a few such
// boots under TCG, one of the rollback less. On a slower guest the window
// is longer by the guest's slowness (updateRun.window), so that a cut
// lands before or after each step of a boot (an agent's start, its first
// wake, the trial's proof) with the same probability as on the reference
// guest. A window that stayed 12 s on a guest four times slower (the host
// loaded by three CPU burners and a second QEMU test) cut every boot
// before the good device's agent had installed the build it had
// downloaded, and its round did not end in maxRoundBoots boots.
const updateCutWindow = 12 * time.Second

// refToReady is the median time from QEMU's start to READY (the kernel's
// boot, /init, and the guest program's checks of the disk: CPU-bound
// work under TCG, as the agents' are) of the reference guest: 20 boots of
// a run on the 2 shared cores at load average 0.6 to 5.7 (2.3 to 14.4 s).
const refToReady = 3800 * time.Millisecond

// maxRoundBoots is how many boots a round may take: a round still not done
// after them is a state no boot recovers from.
const maxRoundBoots = 16

// updateSeedEnv replays TestUpdatePowerCut's cut moments.
const updateSeedEnv = "TORPOR_UPDATECUT_SEED"

// updateCheck is a CHECK line of test/qemu/guest/updatecut.
type updateCheck struct {
	Round     int    `json:"round"`
	Device    string `json:"device"`
	Runs      string `json:"runs"`
	Signed    string `json:"signed"`
	Slot      string `json:"slot"`
	Trial     bool   `json:"trial"`
	Starts    int    `json:"starts"`
	MaxStarts int    `json:"maxStarts"`
	Result    string `json:"result"`
	Download  string `json:"download"`
	Done      bool   `json:"done"`
}

// String is the device's state as the test logs it.
func (c updateCheck) String() string {
	s := "runs " + c.Runs
	if c.Trial {
		s += fmt.Sprintf(" on trial (start %d of %d)", c.Starts+1, c.MaxStarts)
	} else if c.MaxStarts > 0 {
		s += fmt.Sprintf(" (the trial's %d starts are used: the next start rolls back)", c.MaxStarts)
	}
	if c.Result != "" {
		s += ", outcome " + c.Result
	}
	if c.Download != "" {
		s += ", download " + c.Download
	}
	return s
}

// updateMachine is the guest of every boot of TestUpdatePowerCut: the
// guest program, torpor-agent stamped cutBase as the packaged build, the
// devices' keys and the owner's first root, the guest's clock set from
// the host's, and a new disk; the agents' relay is the real torpor-relay
// on the host (w), which holds the update stamped cutNext and the broken
// update (exits at start: test/updates/testdata/crash), both cross-built
// for arm64.
func updateMachine(t *testing.T) (vm.Machine, *updateWorld) {
	t.Helper()
	good, bad := vm.StampedBinary(t, "./cmd/torpor-agent", cutNext), vm.GuestBinary(t, "./test/updates/testdata/crash")
	w := newUpdateWorld(t, good, bad)
	root, err := os.ReadFile(filepath.Join(w.dir, "owner", "1.root.json"))
	if err != nil {
		t.Fatal(err)
	}
	m := vm.Machine{Kernel: vm.FindKernel(t),
		Files: map[string][]byte{
			"bin/updatecut":           vm.GuestBinary(t, "./test/qemu/guest/updatecut"),
			"bin/sink":                vm.GuestBinary(t, "./test/qemu/guest/sink"),
			"bin/torpor-agent":        vm.StampedBinary(t, "./cmd/torpor-agent", cutBase),
			"etc/updatecut/good.key":  w.keys["good"],
			"etc/updatecut/bad.key":   w.keys["bad"],
			"etc/updatecut/root.json": root,
		},
		Modes:   map[string]uint32{"etc/updatecut/good.key": 0o600, "etc/updatecut/bad.key": 0o600},
		Modules: append(append([]string(nil), diskModules...), "virtio_net"), Net: true, TimeSync: vm.TimeServer(t),
		Disk: newDisk(t, 2<<30), Mounts: []string{"/dev/vda:/data:ext4"}, Run: "/bin/updatecut",
		Args: []string{"-dir", "/data", "-relay", w.relay.URL, "-base", cutBase, "-next", cutNext,
			"-good-sha256", hexSum(good), "-bad-sha256", hexSum(bad),
			"-time-scale", strconv.Itoa(cutScale), "-time-epoch", w.epoch, "-budget", strconv.Itoa(cutBudget)},
	}
	m.Initrd = m.WriteInitramfs(t)
	return m, w
}

func hexSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// updateRun is what TestUpdatePowerCut knows across its boots, by device.
type updateRun struct {
	round, roundBoots map[string]int            // the round in progress, the boots it took
	cuts              map[string]int            // cuts in a round in progress
	at                map[string]map[string]int // what the device was doing at its cuts -> count
	after             map[string]map[string]int // what the next boot runs after its cuts -> count
	pending           map[string]string         // what it was doing at the last cut
	last              map[string][]string       // its console lines of the last boot cut, for a failure's log
	toReady           []time.Duration           // each boot's time from QEMU's start to READY
	ended             bool                      // the cuts were made and the rounds in progress ended
	retries           int                       // installs of the working build again after cuts used up its starts
}

var cutDevices = []string{"good", "bad"}

// TestUpdatePowerCut cuts the guest's power (QMP quit) at random moments
// of an update and of a rollback in the arm64 guest, with the devices'
// data on ext4 on a virtio disk with cache=none (the guest program is
// test/qemu/guest/updatecut). Two devices run under their slot launchers
// (the packaged torpor-agent stamped 1.0.0), linked to the real relay on
// the host, which holds the owner's signed targets (the working 2.0.0 and
// the build that exits at start, each signed as version 2 of its target,
// gzip-compressed) and, for each round of a device, a rollout offering it
// its target. Each device keeps one store for all its rounds (made at
// the first boot, before the cuts begin) and runs a round after another,
// each with new slots and a new update directory: its agent takes the
// offer itself, downloading the target over its link within a small
// per-wake byte budget (cutBudget: the download spans several wakes and
// boots), verifying it, installing it into a slot and exiting to restart
// into the trial. The working 2.0.0 must prove itself on trial within 4
// starts (a start a cut ends counts; when cuts use them all up, the
// launcher rolls it back and the test starts another rollout offering it
// again); the broken build's launcher must roll it back to 1.0.0 after two
// starts. After every cut the guest boots again and,
// before anything runs, the slots' state of every round must name a build
// whose binary has the installed hash and is exactly 1.0.0 or 2.0.0, and
// every bbolt file on the disk must open and pass bbolt's page check;
// every agent that starts must be 1.0.0 or 2.0.0; and each round must end,
// within maxRoundBoots boots, with the good device running 2.0.0 installed
// and the bad one running 1.0.0 rolled back, which every later boot finds
// again. The cut moments come from a seed, logged, as fractions of the
// window, which follows the guest's measured speed (updateRun.window);
// TORPOR_UPDATECUT_SEED replays them.
func TestUpdatePowerCut(t *testing.T) {
	m, w := updateMachine(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(updateSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", updateSeedEnv, s, err)
		}
	}
	t.Logf("seed %d (%s=%d replays the cut moments, as fractions of the window)", seed, updateSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 31))
	run := &updateRun{round: map[string]int{}, roundBoots: map[string]int{}, cuts: map[string]int{}, pending: map[string]string{}, last: map[string][]string{},
		at: map[string]map[string]int{"good": {}, "bad": {}}, after: map[string]map[string]int{"good": {}, "bad": {}}}
	start := time.Now()
	for boot := 0; ; boot++ {
		booted := time.Now()
		v := vm.Start(t, m)
		go w.follow(v)
		ready := run.awaitReady(t, v, boot)
		run.toReady = append(run.toReady, time.Since(booted))
		if run.ended { // this boot's checks found the last rounds final
			powerCut(t, v)
			break
		}
		if run.cuts["good"] >= updateCuts && run.cuts["bad"] >= updateCuts {
			run.endRounds(t, v, ready, boot)
			continue
		}
		cut := time.Duration(float64(rng.Int64N(int64(updateCutWindow))) / float64(updateCutWindow) * float64(run.window()))
		ctx, cancel := context.WithTimeout(context.Background(), cut)
		v.Await(ctx, ready, func(l string) bool { return strings.HasPrefix(l, "ERROR") })
		cancel()
		powerCut(t, v)
		run.afterCut(t, v.Lines()[ready:], boot, cut)
		if t.Failed() {
			t.Fatalf("seed %d, boot %d", seed, boot)
		}
	}
	var booting time.Duration
	for _, d := range run.toReady {
		booting += d
	}
	t.Logf("seed %d: %d power cuts of the update in %d rounds and %d of the rollback in %d rounds, %d boots in %v (%v of it from QEMU's start to READY)",
		seed, run.cuts["good"], run.round["good"], run.cuts["bad"], run.round["bad"], len(run.toReady),
		time.Since(start).Round(time.Second), booting.Round(time.Second))
	for _, dev := range cutDevices {
		t.Logf("%s: at the cuts: %s; the boot after: %s", dev, counts(run.at[dev]), counts(run.after[dev]))
	}
	t.Logf("the working build was rolled back %d times by cuts that used up its starts, and installed again", run.retries)
	t.Logf("the last window %v: %v from QEMU's start to READY at the median boot, against %v on the reference guest",
		run.window().Round(100*time.Millisecond), median(run.toReady).Round(100*time.Millisecond), refToReady)
}

// window is the span after READY within which a boot's cut falls:
// updateCutWindow times the guest's slowness, the median of the boots'
// times from QEMU's start to READY so far (this one's included) over
// refToReady, never less than updateCutWindow. Every boot measures it
// before its cut, whatever the cut interrupts.
func (run *updateRun) window() time.Duration {
	return time.Duration(float64(updateCutWindow) * max(1, float64(median(run.toReady))/float64(refToReady)))
}

// median is the median of ds, 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// counts formats a histogram.
func counts(m map[string]int) string {
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// endRounds lets each device end its round without a cut, cuts the power,
// and boots once more: that boot's checks find every round final.
func (run *updateRun) endRounds(t *testing.T, v *vm.VM, ready, boot int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*run.window())
	defer cancel()
	for _, dev := range cutDevices {
		done := fmt.Sprintf("DONE %s %d", dev, run.round[dev])
		if _, _, err := v.Await(ctx, ready, func(l string) bool { return l == done }); err != nil {
			t.Fatalf("boot %d: %s's round %d did not end: %v", boot, dev, run.round[dev], err)
		}
	}
	powerCut(t, v)
	run.checkLines(t, v.Lines()[ready:], boot)
	run.ended = true
}

// awaitReady waits for the guest program's READY and checks its CHECK
// lines; it returns the index of the console line after READY.
func (run *updateRun) awaitReady(t *testing.T, v *vm.VM, boot int) int {
	t.Helper()
	ready := awaitREADY(t, v, boot)
	current, last := map[string]int{}, map[string]int{}
	for _, l := range v.Lines()[:ready] {
		js, ok := strings.CutPrefix(l, "CHECK ")
		if !ok {
			continue
		}
		var c updateCheck
		if err := json.Unmarshal([]byte(js), &c); err != nil {
			t.Fatalf("boot %d: %q: %v", boot, l, err)
		}
		checkState(t, boot, c)
		if !c.Done {
			current[c.Device] = c.Round
		}
		last[c.Device] = max(last[c.Device], c.Round)
		if w, ok := run.pending[c.Device]; ok && !c.Done {
			run.after[c.Device][c.Runs+map[bool]string{true: " on trial", false: ""}[c.Trial]]++
			t.Logf("boot %d: %s after the cut (%s): %s", boot, c.Device, w, c)
			delete(run.pending, c.Device)
		}
	}
	for _, dev := range cutDevices {
		run.nextBoot(t, boot, dev, current[dev], last[dev])
	}
	return ready
}

// nextBoot counts a boot of dev's round current, the last the CHECK lines
// named; every earlier round must be done.
func (run *updateRun) nextBoot(t *testing.T, boot int, dev string, current, last int) {
	t.Helper()
	if current != last {
		t.Fatalf("boot %d: %s's round %d is not done, and round %d began", boot, dev, current, last)
	}
	if current != run.round[dev] {
		run.round[dev], run.roundBoots[dev] = current, 0
	}
	if run.roundBoots[dev]++; run.roundBoots[dev] > maxRoundBoots {
		t.Logf("%s's console in the boot before:\n%s", dev, strings.Join(run.last[dev], "\n"))
		t.Fatalf("boot %d: %s's round %d did not end in %d boots: a state no boot recovers from", boot, dev, current, maxRoundBoots)
	}
}

// checkState checks one device's state after a cut: it runs exactly the
// old or the new version, from the slot that version was installed in,
// and a round that ended holds its final state.
func checkState(t *testing.T, boot int, c updateCheck) {
	t.Helper()
	ok := c.Slot == "" && c.Runs == cutBase && !c.Trial
	if c.Device == "good" {
		ok = ok || (c.Slot == "a" && c.Runs == cutNext)
	} else {
		ok = ok || (c.Slot == "a" && c.Runs == cutNext && c.Trial)
	}
	if !ok {
		t.Errorf("boot %d: %s, round %d: runs %q from slot %q (trial %v); want exactly %s or %s", boot, c.Device, c.Round, c.Runs, c.Slot, c.Trial, cutBase, cutNext)
	}
	if !c.Done {
		return
	}
	if c.Device == "good" && (c.Runs != cutNext || c.Trial || c.Result != "installed") {
		t.Errorf("boot %d: the updated device's round %d ended, yet it %s", boot, c.Round, c)
	}
	if c.Device == "bad" && (c.Runs != cutBase || c.Trial || c.Result != "rolled-back") {
		t.Errorf("boot %d: the rolled-back device's round %d ended, yet it %s", boot, c.Round, c)
	}
}

// afterCut counts the cut for each device and checks the boot's lines.
func (run *updateRun) afterCut(t *testing.T, lines []string, boot int, cut time.Duration) {
	t.Helper()
	run.checkLines(t, lines, boot)
	var was []string
	for _, dev := range cutDevices {
		run.last[dev] = run.last[dev][:0]
		for _, l := range lines {
			if strings.HasPrefix(l, dev+"| ") {
				run.last[dev] = append(run.last[dev], l)
			}
		}
		w := doing(lines, dev)
		was = append(was, dev+": "+w)
		if strings.HasSuffix(w, "final") {
			continue // between two rounds
		}
		run.cuts[dev]++
		run.at[dev][w]++
		run.pending[dev] = w
	}
	t.Logf("boot %d: READY after %v, power cut %v after it (window %v); %s", boot,
		run.toReady[len(run.toReady)-1].Round(100*time.Millisecond), cut.Round(time.Millisecond),
		run.window().Round(100*time.Millisecond), strings.Join(was, "; "))
}

// milestones are the console lines that say how far a device came in a
// round, in its order, with what they mean.
var milestones = []struct{ prefix, contains, name string }{
	{"|", "reason=budget", "downloading"},
	{"|", `msg="update check" outcome=verified`, "verified"},
	{"|", `msg="update put on trial"`, "installed"},
	{"|", `msg=restarting`, "restarting"},
	{"|", `msg="update on trial"`, "trial start"},
	{"|", "crash build: cannot start", "broken build exited"},
	{"|", `msg="update installed"`, "confirmed"},
	{"|", `msg="update rolled back"`, "rolled back"},
	{"OUTCOME ", "", "outcome recorded"},
	{"RETRY ", "", "offered again after cuts used its starts"},
	{"FINAL ", "", "final"},
}

// doing says what dev was doing at the cut: the last milestone of its
// round in the boot's lines, "starting" before any (what the boot found
// is in its CHECK line), "round N" and the milestone when a round ended
// in the boot and the next began.
func doing(lines []string, dev string) string {
	w, rounds := "starting", 0
	for _, l := range lines {
		if strings.HasPrefix(l, "ROUND "+dev+" ") {
			if rounds++; rounds > 1 {
				w = "starting"
			}
		}
		for _, m := range milestones {
			if m.prefix == "|" {
				if strings.HasPrefix(l, dev+"| ") && strings.Contains(l, m.contains) {
					w = m.name
				}
			} else if strings.HasPrefix(l, m.prefix+dev) {
				w = m.name
			}
		}
	}
	if rounds > 1 {
		return "next round " + w
	}
	return w
}

// checkLines fails the test on a guest ERROR line, a panic, or an agent
// that started with a version other than cutBase or cutNext.
func (run *updateRun) checkLines(t *testing.T, lines []string, boot int) {
	t.Helper()
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "ERROR ") || strings.Contains(l, "panic:"):
			t.Errorf("boot %d: guest: %s", boot, l)
		case strings.HasPrefix(l, "RETRY "):
			run.retries++
		case strings.Contains(l, `msg="torpor-agent starting"`):
			if !strings.Contains(l, " version="+cutBase+" ") && !strings.Contains(l, " version="+cutNext+" ") {
				t.Errorf("boot %d: an agent of another version started: %s", boot, l)
			}
		}
	}
}
