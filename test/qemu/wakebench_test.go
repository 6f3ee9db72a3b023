//go:build integration

package qemu

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/test/internal/wakemeter"
	"github.com/torpor-dev/torpor/test/qemu/guest/report"
	"github.com/torpor-dev/torpor/test/qemu/vm"
)

// emptyWakeVMScale is BenchmarkEmptyWakeVM's time scale
// (TORPOR_EMPTYWAKE_SCALE sets another): an hour passes in 30 s, the
// 5-minute window in 2.5 s. The guest's clock is set from the host's to a
// few milliseconds (test/qemu/timesync), which the scale makes a second
// or so between the agent's and the relay's clocks, well inside the
// bearer tokens' 60 s skew.
const emptyWakeVMScale = 120

// BenchmarkEmptyWakeVM is test/link's BenchmarkEmptyWake with the agent
// inside the qemu-system-aarch64 guest (Debian's arm64 kernel, TCG,
// cortex-a53): the real torpor-relay runs on the host and the real
// torpor-agent in the guest, its data on an ext4 file system on a
// virtio-blk disk (cache=none: its fsyncs reach the host's disk, as
// TestPowerCut's), both on a clock 120 times faster from a
// shared epoch (--time-epoch, the relay's start), hourly_wake, nothing
// queued, for b.N empty wakes after its boot wake. The arm64
// sub-benchmarks run the arm64 build, with its data on the disk (ext4) and,
// beside it, on the initramfs (no fsync cost); armv6 runs the GOARM=6 build
// through the arm64 kernel's 32-bit compat layer (there is no armv6 kernel
// here).
//
// Each target runs two builds, as sub-benchmarks: base, the agent and
// relay of the baseline commit d2faa43 (emptyWakeBase, built from git
// history for the guest's platform), and tree, this tree's, in
// TORPOR_EMPTYWAKE_ROUNDS rounds (1 by default) whose order alternates
// (base, tree, then tree, base: wakemeter.RoundOrder). The second run of
// each round reports tree's CPU per wake over base's, summed over the
// rounds so far (wake-cpu-ratio inside the wake, cpu-ratio the whole
// cycle): the goal is 0.5 or less (docs/performance.md).
//
// After the rounds, each arm64 target runs a third build once, floor:
// test/qemu/guest/wakefloor in the agent's place, which does at each
// window only what the protocol and durability ask of any device (the
// link with its token and proof, one bbolt commit, a state frame with the
// mode and the next wake, the window's pings, the close), with this tree's
// link client and relay. It reports its CPU per wake over base's and
// tree's over its own (reportFloor): what no agent on this link could go
// below in the same guest, and how far above it this tree's agent is.
//
// test/qemu/guest/wakebench runs the agent in the guest and reads, on the
// guest's kernel, what test/internal/wakemeter reads: the whole cycle's
// CPU (/proc/PID/stat), the CPU inside each wake (schedstat between the
// "waking" and "wake" log lines) and the wall time awake and per phase
// from the agent's log; these are the guest's figures (TCG makes them
// those of a slow ARM core), not the emulator's. offset-ms is the guest
// clock's offset from the host's after the wakes, as the guest measured
// it.
//
// The guest's kernel counts the time its vCPU thread spent descheduled on
// the host (other processes on the host's cores) as the running guest
// process's CPU, so the host's load moves the guest's figures. The host's
// figures leave it out: the host reads the CPU time of QEMU's vCPU thread
// (TCG: one a vCPU, from QMP's query-cpus-fast) and of its main-loop
// thread from their schedstat every 10 ms (vm.SampleCPU), and reads them,
// interpolated, over the wall-clock spans at which the guest's meter read
// each wake's "waking" and "wake" lines, moved onto the host's clock by
// the offset the guest measured (good to a millisecond). vcpu-ms/wake is
// the vCPU's time inside the wakes: the agent's emulated instructions, its
// kernel's work for it (system calls, virtio-net interrupts, on ext4 the
// journal and virtio-blk), the other guest tasks (wakebench taking the
// agent's log lines, kernel threads; its readings of /proc at the two
// lines fall outside the span, wakemeter.Span), timer ticks while
// the guest is busy, and TCG's translation of guest code it has not run
// before; an idle guest halts its vCPU (WFI), which costs nothing.
// vcpu-cycle-ms/wake is the vCPU's time from the first wake's start to the
// last one's end, per wake; qemu-main-ms/wake the main loop's inside the
// wakes (user networking, the virtio devices' host side), information
// only; wake-wall-ms/wake the wakes' wall time. vcpu-idle-ms/wake is the
// vCPU's time over an interval as long as a wake in the middle of each
// sleep between two measured wakes: what the idle guest costs. The lines
// do not fall in idle time: vcpu-before-ms/wake and vcpu-after-ms/wake
// are the vCPU's time in the 50 ms before each wake's start and after its
// end (the agent's work before it logs "waking" and as it goes to sleep,
// the meter's reading), so a skew of s between the clocks moves
// vcpu-ms/wake by at most about s. vcpu-wake-ratio and vcpu-cycle-ratio
// are tree's over base's, over the sums of the rounds, as wake-cpu-ratio.
//
//	TORPOR_REQUIRE_TOOLS=1 go test -tags integration -count=1 -run '^$' -bench EmptyWakeVM -benchtime 4x ./test/qemu/
func BenchmarkEmptyWakeVM(b *testing.B) {
	rounds, err := wakemeter.Rounds(1)
	if err != nil {
		b.Fatal(err)
	}
	baseRelay := filepath.Join(testenv.BuildAt(b, emptyWakeBase, "torpor-relay"), "torpor-relay")
	for _, tt := range []vmWakeTarget{
		{"arm64/ext4", "arm64", "", true},
		{"arm64/initramfs", "arm64", "", false},
		{"armv6/ext4", "arm", "6", true},
	} {
		b.Run(tt.name, func(b *testing.B) {
			var base, tree vmWakes // summed over the rounds so far
			for r := range rounds {
				for i, build := range wakemeter.RoundOrder(r) {
					b.Run(build+wakemeter.RoundSuffix(r), func(b *testing.B) {
						if build == "base" {
							base = base.add(benchEmptyWakeVM(b, tt, baseAgent(b, tt), baseRelay))
						} else {
							tree = tree.add(benchEmptyWakeVM(b, tt, vm.CrossBinary(b, "./cmd/torpor-agent", tt.goarch, tt.goarm), ""))
						}
						if i == 1 { // the round's second run: both builds have run as often
							wakemeter.ReportRatios(b, base.guest, tree.guest)
							reportVCPURatios(b, base.host, tree.host)
						}
					})
				}
			}
			if tt.goarch == "arm64" {
				b.Run("floor", func(b *testing.B) {
					floor := benchEmptyWakeVM(b, tt, vm.GuestBinary(b, "./test/qemu/guest/wakefloor"), "")
					reportFloor(b, base, tree, floor)
				})
			}
		})
	}
}

// emptyWakeBase is the baseline commit, d2faa43, as in test/link's
// BenchmarkEmptyWake: its empty wake is the one to halve.
const emptyWakeBase = "d2faa430a527491299a7dd18fd1b5470edbfd049"

// baseAgent returns emptyWakeBase's torpor-agent built for tt's platform
// as scripts/cross.sh builds it (its build tags, stripped), with this
// tree's 32-bit ARM segment alignment (layout only) so that both builds
// load alike.
func baseAgent(b *testing.B, tt vmWakeTarget) []byte {
	b.Helper()
	ldflags := "-s -w"
	if tt.goarch == "arm" {
		extra, err := os.ReadFile(filepath.Join(vm.ModuleRoot(b), "scripts", "arm-ldflags"))
		if err != nil {
			b.Fatal(err)
		}
		ldflags += " " + strings.TrimSpace(string(extra))
	}
	dir := testenv.BuildAtWith(b, emptyWakeBase, testenv.BuildOptions{
		Env:      []string{"GOOS=linux", "GOARCH=" + tt.goarch, "GOARM=" + tt.goarm},
		TagsFile: "scripts/agent-tags", LDFlags: ldflags,
	}, "torpor-agent")
	bin, err := os.ReadFile(filepath.Join(dir, "torpor-agent"))
	if err != nil {
		b.Fatal(err)
	}
	return bin
}

// vmWakeTarget is one agent build and where its data directory lives.
type vmWakeTarget struct {
	name          string
	goarch, goarm string
	// disk puts the agent's data on an ext4 file system on the guest's
	// virtio-blk disk, where an fsync reaches the host's disk; otherwise
	// it is on the initramfs, where an fsync costs nothing.
	disk bool
}

// vmWakes is what BenchmarkEmptyWakeVM measured of one build's wakes: in
// the guest, and on the host.
type vmWakes struct {
	guest wakemeter.Wakes
	host  vcpuWakes
}

func (w vmWakes) add(v vmWakes) vmWakes {
	return vmWakes{guest: w.guest.Add(v.guest), host: w.host.add(v.host)}
}

// benchEmptyWakeVM runs the agent binary agentBin in the guest of tt
// against the relay binary relayBin ("" for this tree's) and returns the
// wakes it measured.
func benchEmptyWakeVM(b *testing.B, tt vmWakeTarget, agentBin []byte, relayBin string) vmWakes {
	scale := strconv.Itoa(emptyWakeVMScale)
	if v := os.Getenv("TORPOR_EMPTYWAKE_SCALE"); v != "" {
		scale = v
	}
	key := didtest.New(b)
	epoch := time.Now().UTC().Format(time.RFC3339Nano)
	r := startRelay(b, relayOptions{Guest: true, Allow: []string{key.DID().String()}, Bin: relayBin,
		Args: []string{"--time-scale", scale, "--time-epoch", epoch}})
	timeURL := vm.TimeServer(b)
	m := wakeMachine(b, tt, agentBin, key, r.URL, timeURL, scale, epoch)
	// cpu-ns/op: the host's CPU for the whole guest run (qemu, waited
	// for, with the guest's boot) and this process's, not the relay's; the
	// guest kernel's own figures are cpu-ms/wake.
	meter := benchcpu.Start(b)
	v := vm.Start(b, m)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute+time.Duration(b.N)*2*time.Minute)
	defer cancel()
	samples := sampleVCPU(b, ctx, v)
	if err := v.Wait(ctx); err != nil {
		b.Fatalf("guest: %v", err)
	}
	meter.Stop()
	rs, err := vm.Results[report.Wakebench](v)
	if err != nil || len(rs) != 1 || rs[0].Error != "" || rs[0].Wakes.N != b.N {
		b.Fatalf("guest: %+v, %v", rs, err)
	}
	f, _ := strconv.ParseFloat(scale, 64)
	wakemeter.Report(b, rs[0].Wakes, f)
	b.ReportMetric(float64(rs[0].Offset.Offset)/float64(time.Millisecond), "offset-ms")
	b.Logf("guest clock: %s; after the wakes %v", syncLine(v), rs[0].Offset)
	host := hostWakes(samples, rs[0].Wakes.Spans, rs[0].Offset.Offset)
	host.report(b)
	return vmWakes{guest: rs[0].Wakes, host: host}
}

// wakeMachine is the guest that runs agentBin for b.N empty wakes against
// the relay at relayURL.
func wakeMachine(b *testing.B, tt vmWakeTarget, agentBin []byte, key *did.PrivateKey, relayURL, timeURL, scale, epoch string) vm.Machine {
	data := "/var/lib/torpor"
	if tt.disk {
		data = "/data/torpor"
	}
	agent := []string{"/bin/torpor-agent", "--key", guestKey, "--data-dir", data, "--relay", relayURL,
		"--mode", "hourly_wake", "--name", "bench", "--purposes", "comms:*",
		"--handler", "*=exec:/bin/wakebench", // never run: nothing is queued
		"--time-scale", scale, "--time-epoch", epoch}
	m := vm.Machine{Kernel: vm.FindKernel(b), Net: true, TimeSync: timeURL, Modules: []string{"virtio_mmio", "virtio_net"},
		Files: map[string][]byte{
			"bin/torpor-agent":     agentBin,
			"bin/wakebench":        vm.GuestBinary(b, "./test/qemu/guest/wakebench"),
			"etc/torpor/agent.key": did.MarshalKeyFile(key),
		},
		Modes: map[string]uint32{"etc/torpor/agent.key": 0o600},
		Run:   "/bin/wakebench", Args: append(wakebenchArgs(b.N, timeURL), agent...)}
	if tt.disk {
		m.Modules = append(append([]string(nil), diskModules...), "virtio_net")
		m.Disk, m.Mounts = newDisk(b, 64<<20), []string{"/dev/vda:/data:ext4"}
	}
	return m
}

// wakebenchArgs are test/qemu/guest/wakebench's arguments before the
// agent's: n wakes, the host's time server, and -debug-cpu when
// TORPOR_EMPTYWAKE_DEBUGCPU is 1 (the agent's CPU time on each of its log
// lines, which wakemeter files by line: cpu-to-LABEL-ms/wake).
func wakebenchArgs(n int, timeURL string) []string {
	args := []string{"-n", strconv.Itoa(n), "-time", timeURL}
	if os.Getenv("TORPOR_EMPTYWAKE_DEBUGCPU") == "1" {
		args = append(args, "-debug-cpu")
	}
	return append(args, "--")
}

// syncLine returns what the guest's /init said when it set the clock.
func syncLine(v *vm.VM) string {
	for _, l := range v.Lines() {
		if _, s, ok := strings.Cut(l, "INIT clock set from the host: "); ok {
			return s
		}
	}
	return "not set"
}
