//go:build integration

package qemu

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/test/procs"
	"github.com/torpor-dev/torpor/test/qemu/guest/report"
	"github.com/torpor-dev/torpor/test/qemu/vm"
	"github.com/torpor-dev/torpor/wake"
)

// footprintRecords is how many MLS-encrypted records the measured wake
// drains (besides the Welcome).
const footprintRecords = 500

// footprintBudget is the most resident memory the agent may reach natively
// while it drains them: a memory-budget test with room for
// the garbage collector's slack, not a tight fit.
const footprintBudget = 64 << 20

// footprintAsleepAnon is the most anonymous memory this tree's native
// agent may keep asleep after the drain (footprintSettle after its wake
// ended): its live heap and the runtime's own (4.2–4.4 MiB), with room.
// The agent gives the heap the drain freed back to the kernel before it
// sleeps (runtime.Hooks.FreeOSMemory); when it kept it, this was
// 7.2–7.9 MiB (docs/footprint.md).
const footprintAsleepAnon = 6 << 20

// footprintTarget is one way of running torpor-agent: natively, or an ARM
// build under qemu-user through binfmt_misc with a CPU model.
type footprintTarget struct {
	name          string
	goarch, goarm string
	cpu           string // QEMU_CPU; "" for native
	// vm runs the agent in the qemu-system-aarch64 guest instead, on
	// Debian's arm64 kernel (32-bit builds through its compat layer),
	// where /proc shows the agent's own memory rather than QEMU's.
	vm bool
	// rev, when set, is a git revision whose torpor-agent runs instead of
	// this tree's (TORPOR_FOOTPRINT_BASE).
	rev string
}

var footprintTargets = []footprintTarget{
	{name: "native", goarch: goruntime.GOARCH},
	{name: "armv6", goarch: "arm", goarm: "6", cpu: "arm1176"},
	{name: "armv7", goarch: "arm", goarm: "7", cpu: "cortex-a7"},
	{name: "arm64", goarch: "arm64", cpu: "cortex-a53"},
	{name: "vm-arm64", goarch: "arm64", vm: true},
	{name: "vm-armv7", goarch: "arm", goarm: "7", vm: true},
	{name: "vm-armv6", goarch: "arm", goarm: "6", vm: true},
}

// defaultFootprintTargets run when TORPOR_FOOTPRINT_TARGETS is unset:
// the guest's arm64 row is the agent's own memory on an ARM kernel, the
// 32-bit guest rows (80 s more) run when named.
var defaultFootprintTargets = []string{"native", "armv6", "armv7", "arm64", "vm-arm64"}

// footprint is what one target measured.
type footprint struct {
	target   footprintTarget
	size     int           // stripped binary, bytes
	peak     int64         // VmHWM after the drain, bytes
	idle     int64         // VmHWM of the process that only published its state
	baseline int64         // ru_maxrss of a Go hello under the same QEMU, bytes
	drained  time.Duration // from the agent's start to the last delivery
	split    *memorySplit  // natively and in the guest: what the peak was made of, and asleep
}

// TestFootprint measures torpor-agent's resident memory during one wake
// that drains 500 MLS-encrypted records, natively and under qemu-user for
// armv6 (QEMU_CPU=arm1176), armv7 (cortex-a7) and arm64 (cortex-a53), and
// logs the figures docs/footprint.md records:
//
//	TORPOR_REQUIRE_TOOLS=1 go test -tags integration -count=1 -v -run Footprint ./test/qemu
//
// Natively and in the guest it also logs what the peak is made of
// (memorySplit: anonymous and file-backed memory sampled from /proc during
// the drain, the binary's and agent.db's resident pages, the Go heap of
// each GC cycle, natively the CPU), and the agent's memory asleep after
// the drain: the agent boots outside its window (footprintConfig), so its
// wake ends once it drained, and it sleeps. TORPOR_FOOTPRINT_RUNS=n
// repeats the native rows n times over the same input;
// TORPOR_FOOTPRINT_BASE=<git revision> adds, beside each native and guest
// row, one that runs that revision's agent, so that two builds are
// compared in one run; TORPOR_FOOTPRINT_AGENT_ENV ("GOGC=50
// GOMEMLIMIT=10MiB") is added to the native agents' environment.
//
// TORPOR_FOOTPRINT_TARGETS (e.g. "native,armv6") chooses the targets; the
// default is native, armv6, armv7, arm64 and vm-arm64. vm-arm64, vm-armv7
// and vm-armv6 run the agent in the qemu-system-aarch64 guest instead
// (Debian's arm64 kernel; the 32-bit builds through its compat layer),
// where VmHWM is the agent's own: test/qemu/guest/footprint is the
// application there and reads it. Each takes 30–45 s under TCG.
//
// The input is made once, natively, and copied for every target so that
// each drains the same bytes: a real torpor-relay on loopback; the agent
// runs one wake to publish its KeyPackages and is stopped; a sender
// establishes an MLS pair session through the relay and sends 500
// messages of 4 KiB, which the relay queues for the sleeping agent (503).
// Then, per target, a copy of the relay's and the agent's data
// directories is started: the target's torpor-agent boots outside its
// window, joins the group from the queued Welcome, drains the 500 records
// (pull, decrypt, the six checks, one bbolt transaction per batch of 64,
// ack) and hands each to the application's Unix socket. When the 500th
// arrived and the relay's queue is empty, VmHWM of the process is read
// from /proc/PID/status; once the wake ended and footprintSettle passed,
// its memory asleep; then the process is stopped.
//
// Under qemu-user the process is QEMU running the ARM binary, so its RSS
// includes the emulator (translated code, its own heap); the baseline
// column is a Go hello program under the same QEMU and CPU model.
func TestFootprint(t *testing.T) {
	targets := selectTargets(t)
	for _, tt := range targets {
		if tt.vm {
			vm.FindKernel(t)
		}
		if tt.cpu != "" {
			q := map[string]string{"arm": "arm", "arm64": "aarch64"}[tt.goarch]
			if _, err := os.Stat("/proc/sys/fs/binfmt_misc/qemu-" + q); err != nil {
				testenv.Unavailable(t, "binfmt_misc entry qemu-"+q+" not registered (scripts/setup.sh registers it)")
			}
		}
	}
	in := makeFootprintInput(t)
	var rows []footprint
	for _, tt := range withRuns(t, targets) {
		t.Run(tt.name, func(t *testing.T) {
			f := measureFootprint(t, in, tt)
			rows = append(rows, f)
			if tt.cpu == "" && f.peak > footprintBudget {
				t.Errorf("peak RSS %d MiB natively, over the budget of %d MiB", f.peak>>20, footprintBudget>>20)
			}
			if tt.cpu == "" && !tt.vm && tt.rev == "" && f.split.asleep.Anon > footprintAsleepAnon {
				t.Errorf("asleep after the drain the agent keeps %s of anonymous memory, over %s", mib(f.split.asleep.Anon), mib(footprintAsleepAnon))
			}
		})
	}
	t.Log("\n" + footprintTable(rows) + "\n" + splitTable(rows))
}

// footprintTable is the table docs/footprint.md records.
func footprintTable(rows []footprint) string {
	var b strings.Builder
	fmt.Fprintf(&b, "torpor-agent, one wake draining %d MLS-encrypted records of 4 KiB:\n", footprintRecords)
	fmt.Fprintf(&b, "| target | stripped size | peak RSS (VmHWM) | peak RSS of a wake that only published | Go hello under the same QEMU | start to last delivery |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|\n")
	for _, f := range rows {
		base := "—"
		if f.baseline > 0 {
			base = mib(f.baseline)
		}
		name := f.target.name
		switch {
		case f.target.cpu != "":
			name += " (qemu-user, " + f.target.cpu + ")"
		case f.target.vm:
			name += " (qemu-system, arm64 kernel)"
		}
		idle := "—"
		if f.idle > 0 {
			idle = mib(f.idle)
		}
		fmt.Fprintf(&b, "| %s | %d bytes (%s) | %s | %s | %s | %.1f s |\n", name, f.size, mib(int64(f.size)),
			mib(f.peak), idle, base, f.drained.Seconds())
	}
	return b.String()
}

// splitTable is what the native and guest rows' peaks were made of, and
// their memory asleep after the drain (memorySplit). File-backed memory
// is RssFile with RssShmem: in the guest the binary and agent.db live on
// the initramfs (tmpfs), whose mapped pages the kernel counts as shared
// memory. In the guest the binary's written data and the CPU are not
// read ("—").
func splitTable(rows []footprint) string {
	var b strings.Builder
	fmt.Fprintf(&b, "What the drain's peak is made of, and the agent asleep after it (%v after its wake ended):\n", footprintSettle)
	fmt.Fprintf(&b, "| target | VmHWM | sample at the peak: anonymous + file | binary resident (of it written data) | agent.db resident | Go heap: most at a cycle's start / live / goal, cycles | CPU to the last delivery | asleep: VmRSS = anonymous + file |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|\n")
	for _, f := range rows {
		sp := f.split
		if sp == nil {
			continue
		}
		written, cpu := "—", "—"
		if !f.target.vm {
			written, cpu = mib(sp.binary.Anon), fmt.Sprintf("%d ms", sp.cpu.Milliseconds())
		}
		fmt.Fprintf(&b, "| %s | %s | %s = %s + %s | %s (%s) | %s | %d / %d / %d MiB, %d | %s | %s = %s + %s |\n", f.target.name, mib(f.peak),
			mib(sp.peak.RSS), mib(sp.peak.Anon), mib(sp.peak.File+sp.peak.Shmem), mib(sp.binary.RSS), written, mib(sp.db.RSS),
			sp.gc.MaxHeap, sp.gc.MaxLive, sp.gc.MaxGoal, sp.gc.Cycles, cpu,
			mib(sp.asleep.RSS), mib(sp.asleep.Anon), mib(sp.asleep.File+sp.asleep.Shmem))
	}
	return b.String()
}

// withRuns adds, when TORPOR_FOOTPRINT_BASE names a git revision, a
// target that runs that revision's agent beside each native and guest
// (vm-*) target; and repeats the native targets TORPOR_FOOTPRINT_RUNS
// times (default 1), one after the other, so that two builds are measured
// side by side over the same input. The guest rows of the two builds run
// one after the other, once each.
func withRuns(t *testing.T, targets []footprintTarget) []footprintTarget {
	if rev := os.Getenv("TORPOR_FOOTPRINT_BASE"); rev != "" {
		for _, tt := range targets {
			if tt.cpu == "" { // native and the guest's
				tt.name, tt.rev = tt.name+"@"+rev, rev
				targets = append(targets, tt)
			}
		}
	}
	runs := 1
	if env := os.Getenv("TORPOR_FOOTPRINT_RUNS"); env != "" {
		var err error
		if runs, err = strconv.Atoi(env); err != nil || runs < 1 {
			t.Fatalf("TORPOR_FOOTPRINT_RUNS=%q: want a count", env)
		}
	}
	var out []footprintTarget
	for _, tt := range targets {
		if tt.cpu != "" || tt.vm {
			out = append(out, tt)
		}
	}
	for i := range runs {
		for _, tt := range targets {
			if tt.cpu == "" && !tt.vm {
				if runs > 1 {
					tt.name += fmt.Sprintf("#%d", i+1)
				}
				out = append(out, tt)
			}
		}
	}
	return out
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func selectTargets(t *testing.T) []footprintTarget {
	names := defaultFootprintTargets
	if env := os.Getenv("TORPOR_FOOTPRINT_TARGETS"); env != "" {
		names = strings.Split(env, ",")
	}
	var out []footprintTarget
	for _, name := range names {
		found := false
		for _, tt := range footprintTargets {
			if tt.name == strings.TrimSpace(name) {
				out = append(out, tt)
				found = true
			}
		}
		if !found {
			t.Fatalf("TORPOR_FOOTPRINT_TARGETS: unknown target %q (want native, armv6, armv7, arm64, vm-arm64, vm-armv7, vm-armv6)", name)
		}
	}
	return out
}

// footprintInput is the relay's and the agent's data, with 500 records
// queued, ready to be copied for each target.
type footprintInput struct {
	relayData string // the relay's --data-dir
	agentData string // the agent's dataDir after its first wake
	keyFile   string
	key       *did.PrivateKey
	ids       map[string]bool // the queued objects
	idle      int64           // VmHWM of the native agent that only published
}

func makeFootprintInput(t *testing.T) *footprintInput {
	t.Helper()
	dir := t.TempDir()
	in := &footprintInput{relayData: filepath.Join(dir, "relay"), agentData: filepath.Join(dir, "agent"),
		key: didtest.New(t), ids: map[string]bool{}}
	in.keyFile = testenv.KeyFile(t, in.key)
	r := startRelayAt(t, in.relayData, in.key)
	native := footprintTargets[0]
	// The agent publishes its state and KeyPackages, then is stopped: the
	// relay then answers senders that it sleeps, and queues.
	a := startFootprintAgent(t, in, r, native, in.agentData)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, _, err := r.proc.Out().Await(ctx, 0, func(l procs.Line) bool {
		return l.Msg == "state published" && l.Get("keyPackages") != "" && l.Get("keyPackages") != "0"
	}); err != nil {
		t.Fatalf("the agent did not publish its KeyPackages: %v", err)
	}
	in.idle = a.proc.peakRSS()
	if err := a.proc.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	snd, sndKey := newSender(t, r)
	text := strings.Repeat("x", 4<<10)
	var ls []letter
	for i := range footprintRecords {
		l := message(t, sndKey, "comms:message", fmt.Sprintf("%04d %s", i, text))
		ls = append(ls, l)
		in.ids[l.id] = true
	}
	start := time.Now()
	sendAll(t, snd, r, in.key.DID(), ls)
	t.Logf("queued %d MLS-encrypted records in %v", footprintRecords, time.Since(start).Round(time.Millisecond))
	if err := r.proc.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	return in
}

// runningAgent is a torpor-agent process and the application it delivers
// to.
type runningAgent struct {
	proc *agentProc
	sink *procs.Sink
	n    atomic.Int64
	all  chan struct{} // closed at the footprintRecords'th delivery
	bin  string        // the binary it runs
	log  string        // its stdout and stderr
}

// agentBinary is tt's torpor-agent: this tree's, or tt.rev's, built for
// tt's architecture as scripts/cross.sh builds the agent (its tags,
// stripped; on 32-bit ARM with this tree's scripts/arm-ldflags, so that
// both builds lay out their segments alike).
func agentBinary(t *testing.T, tt footprintTarget) []byte {
	t.Helper()
	if tt.rev == "" {
		return vm.CrossBinary(t, "./cmd/torpor-agent", tt.goarch, tt.goarm)
	}
	key := tt.rev + " " + tt.goarch + tt.goarm
	if b, ok := revAgents[key]; ok {
		return b
	}
	o := testenv.BuildOptions{TagsFile: "scripts/agent-tags", LDFlags: "-s -w", Env: []string{"GOOS=linux", "GOARCH=" + tt.goarch}}
	if tt.goarm != "" {
		o.Env = append(o.Env, "GOARM="+tt.goarm)
	}
	if tt.goarch == "arm" {
		extra, err := os.ReadFile(filepath.Join(vm.ModuleRoot(t), "scripts", "arm-ldflags"))
		if err != nil {
			t.Fatal(err)
		}
		o.LDFlags += " " + strings.TrimSpace(string(extra))
	}
	dir := testenv.BuildAtWith(t, tt.rev, o, "torpor-agent")
	b, err := os.ReadFile(filepath.Join(dir, "torpor-agent"))
	if err != nil {
		t.Fatal(err)
	}
	revAgents[key] = b
	return b
}

// revAgents are the agents agentBinary built from git history, by
// revision and architecture.
var revAgents = map[string][]byte{}

// startFootprintAgent starts torpor-agent for tt with its data in data,
// outside its window (footprintConfig), linked to r, delivering comms:* to
// a Unix socket.
func startFootprintAgent(t *testing.T, in *footprintInput, r *hostRelay, tt footprintTarget, data string) *runningAgent {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "torpor-agent")
	if err := os.WriteFile(bin, agentBinary(t, tt), 0o755); err != nil {
		t.Fatal(err)
	}
	a := &runningAgent{all: make(chan struct{}), bin: bin, log: filepath.Join(dir, "agent.log")}
	sock := filepath.Join(dir, "app.sock")
	var err error
	if a.sink, err = procs.StartSink(sock, func(procs.Received) {
		if a.n.Add(1) == footprintRecords {
			close(a.all)
		}
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.sink.Close() })
	b := footprintConfig(in, r, data, in.keyFile, map[string]any{"purpose": "comms:*", "unix": map[string]string{"socket": sock, "path": "/message"}})
	conf := filepath.Join(dir, "agent.json")
	if err := os.WriteFile(conf, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	switch {
	case tt.cpu != "":
		env = []string{"QEMU_CPU=" + tt.cpu}
	case !tt.vm:
		env = []string{"GODEBUG=gctrace=1"} // the Go heap at each cycle, for memorySplit
		if e := os.Getenv("TORPOR_FOOTPRINT_AGENT_ENV"); e != "" {
			env = append(env, strings.Fields(e)...)
		}
	}
	a.proc = startAgentProc(t, bin, []string{"--config", conf}, dir, env)
	return a
}

// agentProc is a torpor-agent process whose output goes to a log file.
type agentProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // how it exited, valid after done
}

func startAgentProc(t *testing.T, bin string, args []string, dir string, env []string) *agentProc {
	t.Helper()
	logPath := filepath.Join(dir, "agent.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := &agentProc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Dir, p.cmd.Stdout, p.cmd.Stderr = dir, f, f
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(10 * time.Second)
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("agent log:\n%s", b)
		}
	})
	return p
}

// peakRSS returns VmHWM from /proc/PID/status, in bytes (0 when it cannot
// be read).
func (p *agentProc) peakRSS() int64 { return procs.PeakRSS(p.cmd.Process.Pid) }

// stop sends SIGTERM and waits up to grace, then kills. It returns an
// error unless the process exited 0 or of the SIGTERM.
func (p *agentProc) stop(grace time.Duration) error {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			p.cmd.Process.Kill()
			<-p.done
			return fmt.Errorf("torpor-agent did not stop within %v of SIGTERM", grace)
		}
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
		return nil
	}
	return p.err
}

// measureFootprint runs one wake of tt's agent over a copy of the input.
func measureFootprint(t *testing.T, in *footprintInput, tt footprintTarget) footprint {
	if tt.vm {
		return measureFootprintVM(t, in, tt)
	}
	f := footprint{target: tt, size: len(agentBinary(t, tt))}
	dir := t.TempDir()
	relayData, agentData := filepath.Join(dir, "relay"), filepath.Join(dir, "agent")
	copyDir(t, in.relayData, relayData)
	copyDir(t, in.agentData, agentData)
	r := startRelayAt(t, relayData, in.key)
	start := time.Now()
	a := startFootprintAgent(t, in, r, tt, agentData)
	var sampler *procs.MemorySampler
	if tt.cpu == "" {
		sampler = procs.SampleMemory(a.proc.cmd.Process.Pid, footprintSampleEvery)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	select {
	case <-a.all:
	case <-a.proc.done:
		t.Fatalf("the agent exited after %d deliveries: %v", a.n.Load(), a.proc.err)
	case <-ctx.Done():
		t.Fatalf("%d of %d records delivered in %v", a.n.Load(), footprintRecords, time.Since(start))
	}
	f.drained = time.Since(start)
	awaitAcknowledged(t, ctx, r, in.key.DID().String())
	f.peak = a.proc.peakRSS()
	if sampler != nil {
		f.split = nativeSplit(t, ctx, sampler, a, agentData)
	} else if err := a.proc.stop(time.Minute); err != nil {
		t.Errorf("stopping the agent: %v", err)
	}
	checkDeliveredOnce(t, a.sink.Received(), in.ids)
	if tt.rev == "" {
		f.idle = in.idle // this tree's agent's
	}
	if tt.cpu != "" {
		f.idle = 0
		f.baseline = helloRSS(t, tt)
	}
	t.Logf("%s: %d bytes stripped, peak RSS %s (VmHWM), %d records drained and delivered %.1f s after start",
		tt.name, f.size, mib(f.peak), footprintRecords, f.drained.Seconds())
	return f
}

// nativeSplit completes the split of the native agent a, which delivered
// the last record: its mappings and CPU now, its memory once it sleeps,
// then it is stopped and its gctrace read.
func nativeSplit(t *testing.T, ctx context.Context, s *procs.MemorySampler, a *runningAgent, data string) *memorySplit {
	t.Helper()
	pid := a.proc.cmd.Process.Pid
	sp, err := finishSplit(s, pid, a.bin, data)
	if err != nil {
		t.Fatal(err)
	}
	if sp.asleep, err = readAsleep(ctx, pid, a.log); err != nil {
		t.Error(err)
	}
	if err := a.proc.stop(time.Minute); err != nil {
		t.Errorf("stopping the agent: %v", err)
	}
	if sp.gc, err = procs.ReadGCTrace(a.log); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %v", filepath.Base(t.Name()), sp)
	return sp
}

// awaitAcknowledged returns once the relay queues nothing for agent:
// every record was acknowledged once the device committed it.
func awaitAcknowledged(t *testing.T, ctx context.Context, r *hostRelay, agent string) {
	t.Helper()
	for {
		depths, err := procs.QueueDepths(ctx, r.HTTP, r.URL)
		if err != nil {
			t.Fatal(err)
		}
		if depths[agent] == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the relay still queues %d records", depths[agent])
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkDeliveredOnce checks that got, what the application received,
// holds each of ids exactly once and nothing else.
func checkDeliveredOnce(t *testing.T, got []procs.Received, ids map[string]bool) {
	t.Helper()
	seen := map[string]int{}
	for _, d := range got {
		seen[d.ObjectID]++
	}
	for id := range ids {
		if seen[id] != 1 {
			t.Errorf("object %s delivered %d times, want once", id, seen[id])
		}
	}
	if len(seen) != len(ids) {
		t.Errorf("%d distinct objects delivered, want %d", len(seen), len(ids))
	}
}

// measureFootprintVM runs the wake in the qemu-system-aarch64 guest: the
// agent's data directory goes into the initramfs, the relay runs on the
// host, and test/qemu/guest/footprint is the application that reads the
// agent's VmHWM on the guest's kernel at the last delivery.
func measureFootprintVM(t *testing.T, in *footprintInput, tt footprintTarget) footprint {
	k := vm.FindKernel(t)
	agent := agentBinary(t, tt)
	f := footprint{target: tt, size: len(agent)}
	relayData := filepath.Join(t.TempDir(), "relay")
	copyDir(t, in.relayData, relayData)
	r := startRelay(t, relayOptions{Guest: true, Data: relayData, Args: relayBounds, Allow: []string{in.key.DID().String()}})
	const data, sock = "var/lib/torpor", "/tmp/app.sock"
	files := map[string][]byte{
		"bin/torpor-agent":     agent,
		"bin/footprint":        vm.GuestBinary(t, "./test/qemu/guest/footprint"),
		"etc/torpor/agent.key": did.MarshalKeyFile(in.key),
		"etc/torpor/agent.json": footprintConfig(in, r, "/"+data, guestKey,
			map[string]any{"purpose": "comms:*", "unix": map[string]string{"socket": sock, "path": "/message"}}),
	}
	modes := map[string]uint32{"etc/torpor/agent.key": 0o600}
	entries, err := os.ReadDir(in.agentData)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(in.agentData, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[data+"/"+e.Name()], modes[data+"/"+e.Name()] = b, 0o600
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	v := vm.Start(t, vm.Machine{Kernel: k, Files: files, Modes: modes, Net: true, Modules: []string{"virtio_mmio", "virtio_net"},
		Run: "/bin/footprint", Args: []string{"-n", fmt.Sprint(footprintRecords), "-socket", sock, "--", "/bin/torpor-agent", "--config", guestConfig}})
	if err := v.Wait(ctx); err != nil {
		t.Fatalf("guest: %v", err)
	}
	rs, err := vm.Results[report.Footprint](v)
	if err != nil || len(rs) != 1 {
		t.Fatalf("%d RESULT lines, %v", len(rs), err)
	}
	if rs[0].Error != "" || rs[0].Delivered != footprintRecords {
		t.Fatalf("guest: %+v", rs[0])
	}
	checkQueueEmpty(t, r, in.key.DID())
	f.peak, f.drained = rs[0].PeakKiB<<10, time.Duration(rs[0].ElapsedMS)*time.Millisecond
	f.split = guestSplit(rs[0])
	t.Logf("%s: %v", tt.name, f.split)
	t.Logf("%s: %d bytes stripped, peak RSS %s (VmHWM on the guest's kernel), %d records drained and delivered %.1f s after start",
		tt.name, f.size, mib(f.peak), footprintRecords, f.drained.Seconds())
	return f
}

// footprintConfig is the agent's configuration: linked to r, comms:* to
// handler, with an hourly window of half an hour that opens in 20
// minutes. The agent boots outside its window, so its boot wake publishes
// its state, drains what is queued and ends (it does not stay linked to
// the window's end); then it sleeps, and its memory asleep can be read.
func footprintConfig(in *footprintInput, r *hostRelay, data, key string, handler any) []byte {
	c := map[string]any{
		"version": 1, "key": key, "dataDir": data, "relay": r.URL, "mode": string(wake.HourlyWake),
		"window":   map[string]string{"length": "30m", "offset": windowOffset(in.key.DID(), time.Now().Add(20*time.Minute)).String()},
		"purposes": []string{"comms:*"},
		"handlers": []any{handler},
	}
	b, _ := json.Marshal(c)
	return b
}

// relayBounds give the relay's queue room for the records.
var relayBounds = []string{"--max-messages", "1000", "--max-per-peer", "1000", "--max-bytes", fmt.Sprint(64 << 20), "--max-peer-bytes", fmt.Sprint(64 << 20)}

// startRelayAt starts torpor-relay on loopback with its data in data,
// with room for the records in its queue, serving the agent of key.
func startRelayAt(t *testing.T, data string, key *did.PrivateKey) *hostRelay {
	t.Helper()
	return startRelay(t, relayOptions{Data: data, Args: relayBounds, Allow: []string{key.DID().String()}})
}

// helloRSS runs test/qemu/guest/hello for tt under qemu-user and returns
// its VmHWM: the emulator's own share of a Go program's RSS.
func helloRSS(t *testing.T, tt footprintTarget) int64 {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hello")
	if err := os.WriteFile(bin, vm.CrossBinary(t, "./test/qemu/guest/hello", tt.goarch, tt.goarm), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-hold")
	cmd.Env = append(os.Environ(), "QEMU_CPU="+tt.cpu)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	rss := procs.PeakRSS(cmd.Process.Pid)
	in.Close()
	if werr := cmd.Wait(); err != nil || werr != nil || !strings.HasPrefix(line, "RESULT ") {
		t.Fatalf("hello under qemu-user: %q, %v, %v", line, err, werr)
	}
	return rss
}

// copyDir copies the regular files of src into dst (bbolt files, which
// are closed: their processes have stopped).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}
