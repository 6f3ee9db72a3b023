//go:build integration

package link

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/test/internal/wakemeter"
	"github.com/torpor-dev/torpor/transport/mqtt/mqtttest"
)

// emptyWakeScale is the default time scale of BenchmarkEmptyWake
// (TORPOR_EMPTYWAKE_SCALE sets another): an hour passes in 6 s, a
// 5-minute window in 0.5 s. The relay runs at the same scale, from the
// same epoch (--time-epoch), so that their clocks agree however long the
// agent takes to start (under qemu-user, a while).
const emptyWakeScale = 600

// BenchmarkEmptyWake runs the real torpor-agent (hourly_wake, on a scaled
// clock) against a real torpor-relay, nothing queued, for b.N empty wakes
// after its boot wake: link, pulse, card, state frame, an empty drain, the
// live phase to the window's end, the next wake announced, the close, and
// sleep again. It reads the agent process's CPU time (user and system) from
// /proc and reports, per wake:
//
//   - cpu-ms/wake: the whole cycle, from the first measured wake's start to
//     the last one's end, divided by b.N (/proc/PID/stat, 10 ms ticks);
//   - wake-cpu-ms/wake: the CPU between each wake's "waking" and "wake" log
//     lines (nanoseconds from /proc/PID/task/*/schedstat), which leaves
//     out the sleep: on the scaled clock the sleep's timer (once a real
//     minute, package wake/timer) and Go's sysmon thread, which a board in
//     suspend does not pay;
//   - sleep-cpu-ms/sleep: the CPU from each wake's "wake" line to the
//     next one's "waking" (schedstat): going to sleep and the sleep on the
//     scaled clock;
//   - awake-ms/wake and the phases' ms/wake: wall time, in real time,
//     without the idle live phase;
//   - wire-sent-B/wake and wire-recv-B/wake: the bytes the agent sent to
//     the relay and received from it, counted by a TCP proxy between them
//     (the relay's public URL is the proxy's), so that a build that does
//     not count its own traffic is measured alike.
//
// It runs two builds side by side, as sub-benchmarks: build=base, the
// agent and relay of the baseline commit d2faa43 (emptyWakeBase,
// built from git history), and build=tree, this tree's, in
// TORPOR_EMPTYWAKE_ROUNDS rounds (2 by default) whose order alternates
// (base, tree, then tree, base: wakemeter.RoundOrder), so that a load
// that drifts over the run favours neither build. The second run of each
// round reports tree's figures per wake over base's, summed over the
// rounds so far: wake-cpu-ratio inside the wake, cpu-ratio the whole
// cycle, wire-B-ratio the bytes both ways (scripts/bench.sh prints them).
// TORPOR_EMPTYWAKE_AGENT names one prebuilt agent binary to run instead
// and TORPOR_EMPTYWAKE_EXEC a command that runs it (such as "qemu-arm -cpu
// arm1176" for the armv6 binary under qemu-user); TORPOR_EMPTYWAKE_PERF a
// file for perf(1) samples of the measured wakes.
func BenchmarkEmptyWake(b *testing.B) {
	relay := testenv.Binary(b, "torpor-relay")
	if v := os.Getenv("TORPOR_EMPTYWAKE_AGENT"); v != "" {
		emptyWakes(b, v, relay)
		return
	}
	rounds, err := wakemeter.Rounds(2)
	if err != nil {
		b.Fatal(err)
	}
	base := testenv.BuildAt(b, emptyWakeBase, "torpor-agent", "torpor-relay")
	builds := map[string][2]string{ // agent, relay
		"base": {filepath.Join(base, "torpor-agent"), filepath.Join(base, "torpor-relay")},
		"tree": {testenv.Binary(b, "torpor-agent"), relay},
	}
	sums := map[string]measured{} // each build's, over the rounds so far
	for r := range rounds {
		for i, build := range wakemeter.RoundOrder(r) {
			b.Run("build="+build+wakemeter.RoundSuffix(r), func(b *testing.B) {
				sums[build] = sums[build].add(emptyWakes(b, builds[build][0], builds[build][1]))
				if i == 1 { // the round's second run: both builds have run as often
					reportRatios(b, sums["base"], sums["tree"])
				}
			})
		}
	}
}

// measured is what emptyWakes measured: the wakes, and the bytes the
// proxy counted each way.
type measured struct {
	w          wakemeter.Wakes
	sent, recv int64
}

func (m measured) add(o measured) measured {
	return measured{w: m.w.Add(o.w), sent: m.sent + o.sent, recv: m.recv + o.recv}
}

// reportRatios reports tree's figures per wake over base's
// (wakemeter.ReportRatios) and wire-B-ratio, the bytes both ways.
func reportRatios(b *testing.B, base, tree measured) {
	wakemeter.ReportRatios(b, base.w, tree.w)
	if base.w.N > 0 && tree.w.N > 0 && base.sent+base.recv > 0 {
		perWake := func(m measured) float64 { return float64(m.sent+m.recv) / float64(m.w.N) }
		b.ReportMetric(perWake(tree)/perWake(base), "wire-B-ratio")
	}
}

// emptyWakeBase is the baseline commit, d2faa43: its empty wake is the
// one to halve, in CPU and in bytes (docs/performance.md).
const emptyWakeBase = "d2faa430a527491299a7dd18fd1b5470edbfd049"

// emptyWakes measures b.N empty wakes of the agent binary agentBin
// against the relay binary relayBin, reports them and returns them.
func emptyWakes(b *testing.B, agentBin, relayBin string) measured {
	scale := emptyWakeScale
	if v := os.Getenv("TORPOR_EMPTYWAKE_SCALE"); v != "" {
		scale, _ = strconv.Atoi(v)
	}
	dir := b.TempDir()
	addr := testenv.FreeAddr(b)
	proxy := mqtttest.StartProxy(b, addr)
	proxyURL := "http://" + proxy.Addr()
	epoch := time.Now().UTC().Format(time.RFC3339Nano)
	key := didtest.Key(b, 7)
	keyFile := filepath.Join(dir, "agent.key")
	if err := did.SaveKey(keyFile, key, true); err != nil {
		b.Fatal(err)
	}
	argv := append(strings.Fields(os.Getenv("TORPOR_EMPTYWAKE_EXEC")), agentBin, "--key", keyFile, "--data-dir", filepath.Join(dir, "agent"),
		"--relay", proxyURL, "--mode", "hourly_wake", "--name", "bench", "--purposes", "comms:*",
		"--handler", "*=exec:/bin/true", "--time-scale", strconv.Itoa(scale), "--time-epoch", epoch)
	// The relay listens on addr, behind the proxy, whose URL it publishes;
	// a later flag overrides relaytest's 127.0.0.1:0.
	relay := relaytest.StartBinary(b, relayBin, filepath.Join(dir, "relay"), "--listen", addr, "--public-url", proxyURL,
		"--time-scale", strconv.Itoa(scale), "--time-epoch", epoch)
	agent := testenv.Start(b, argv[0], argv[1:]...)
	pid := agent.Cmd.Process.Pid
	agent.Next(b, 1, "msg=wake ", "reason=boot") // the boot wake: opens the store, makes KeyPackages
	stopPerf := perfRecord(b, pid)
	b.ResetTimer()
	meter := benchcpu.Start(b) // cpu-ns/op: the relay's, the agent's and this process's
	meter.Add(pid)
	meter.Add(relay.Cmd.Process.Pid)
	sent0, recv0 := proxy.Bytes()
	m := measureWakes(b, agent, pid, b.N)
	sent1, recv1 := proxy.Bytes()
	b.StopTimer()
	meter.Stop()
	stopPerf()
	wakemeter.Report(b, m, float64(scale))
	b.ReportMetric(float64(sent1-sent0)/float64(b.N), "wire-sent-B/wake")
	b.ReportMetric(float64(recv1-recv0)/float64(b.N), "wire-recv-B/wake")
	return measured{w: m, sent: sent1 - sent0, recv: recv1 - recv0}
}

// measureWakes follows the agent's log for n timer wakes
// (test/internal/wakemeter).
func measureWakes(tb testing.TB, agent *testenv.Proc, pid, n int) wakemeter.Wakes {
	tb.Helper()
	m := wakemeter.New(pid, n)
	for {
		done, err := m.Line(agent.Next(tb, 1)[0]) // every line: the meter counts the wake's
		if err != nil {
			tb.Fatal(err)
		}
		if done {
			return m.Wakes()
		}
	}
}

// perfRecord samples pid's stacks with perf(1) into the file
// TORPOR_EMPTYWAKE_PERF names, when it is set, until the returned function
// is called (`perf report -i FILE --no-children --sort sym` reads it).
func perfRecord(tb testing.TB, pid int) func() {
	out := os.Getenv("TORPOR_EMPTYWAKE_PERF")
	if out == "" {
		return func() {}
	}
	cmd := exec.Command("perf", "record", "-F", "4999", "-g", "-p", strconv.Itoa(pid), "-o", out)
	if err := cmd.Start(); err != nil {
		tb.Fatalf("perf: %v", err)
	}
	return func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
}
